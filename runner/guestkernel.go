package runner

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// guestKernel is what doctor knows of a cell's guest kernel without
// booting it: how to name it and its Linux version (ok false: unknown, an
// image it cannot read).
type guestKernel struct {
	desc         string // "Debian 6.1", "/boot/vmlinuz-6.18.0", ...
	major, minor int
	ok           bool
}

var versionRe = lazyre.New(`^([0-9]+)\.([0-9]+)`)

// linuxVersion reads "X.Y" from the front of a release, ABI or series
// ("6.12.117+deb12-cloud-amd64", "6.1.0-47", "6.12").
func linuxVersion(s string) (major, minor int, ok bool) {
	m := versionRe().FindStringSubmatch(s)
	if m == nil {
		return 0, 0, false
	}
	major, _ = strconv.Atoi(m[1])
	minor, _ = strconv.Atoi(m[2])
	return major, minor, true
}

// HostBootImage is the running kernel's /boot image ("" when the host has
// none).
func HostBootImage() string {
	rel, err := hostnet.KernelRelease()
	if err != nil {
		return ""
	}
	img := "/boot/vmlinuz-" + rel
	if _, err := os.Stat(img); err != nil {
		return ""
	}
	return img
}

// guestKernelOf resolves c's guest kernel as vmimages and the lab would:
// guest.kernel's Debian version or image; else, on the running kernel,
// the host's /boot image when it has one, in a lab VM the lab kernel's
// when it is a /boot image of this host; else Debian's default series.
// hostImage is the host's /boot image (HostBootImage).
func guestKernelOf(c *scenarios.Cell, hostImage string) guestKernel {
	g := c.Guest.Kernel
	fromImage := func(img string) guestKernel {
		k := guestKernel{desc: img}
		if rel, err := vmimages.KernelRelease(img); err == nil {
			k.major, k.minor, k.ok = linuxVersion(rel)
		}
		return k
	}
	switch {
	case g.Debian != "":
		k := guestKernel{desc: "Debian " + g.Debian}
		k.major, k.minor, k.ok = linuxVersion(g.Debian)
		return k
	case g.Image != "":
		return fromImage(g.Image)
	case c.Kernel.Running():
		if hostImage != "" {
			return fromImage(hostImage)
		}
	case strings.HasPrefix(c.Kernel.Image, "/boot/vmlinuz-"):
		return fromImage(c.Kernel.Image)
	}
	k := guestKernel{desc: "Debian " + vmimages.DefaultDebianSeries}
	k.major, k.minor, k.ok = linuxVersion(vmimages.DefaultDebianSeries)
	return k
}

// lacks reports whether k is older than Linux release since ("6.4").
func (k guestKernel) lacks(since string) bool {
	maj, min, ok := linuxVersion(since)
	return k.ok && ok && (k.major < maj || k.major == maj && k.minor < min)
}

// GuestKernelNotes says which cells will read n/a because their guest
// kernel is older than a KernelFeature their workload needs (doctor's
// verdict on a scenario, known from the releases without booting), one
// note per feature and guest kernel, e.g. "tap/vsock-t1/sockmap reads
// n/a: its guest kernel Debian 6.1 has no vsock sockmap (Linux 6.4+); set
// guest.kernel.debian to a newer series such as \"6.12\"".
func GuestKernelNotes(cells []scenarios.Cell) []string {
	return guestKernelNotes(cells, HostBootImage())
}

// guestKernelNotes is GuestKernelNotes on a host whose /boot image is
// hostImage ("" = none).
func guestKernelNotes(cells []scenarios.Cell, hostImage string) []string {
	type key struct{ feature, kernel string }
	byKey := map[key][]string{}
	var order []key
	for i := range cells {
		c := &cells[i]
		if c.Generator.Config == nil {
			continue
		}
		feats := c.Generator.Config.Needs().GuestFeatures
		if len(feats) == 0 {
			continue
		}
		k := guestKernelOf(c, hostImage)
		for _, f := range feats {
			if !k.lacks(f.Since) {
				continue
			}
			kk := key{f.Name + " (Linux " + f.Since + "+)", k.desc}
			if _, ok := byKey[kk]; !ok {
				order = append(order, kk)
			}
			if !containsString(byKey[kk], c.Name) {
				byKey[kk] = append(byKey[kk], c.Name)
			}
		}
	}
	var out []string
	for _, k := range order {
		verb := "reads"
		if len(byKey[k]) > 1 {
			verb = "read"
		}
		out = append(out, fmt.Sprintf("%s %s n/a: guest kernel %s has no %s; set guest.kernel.debian to a newer series such as \"6.12\"",
			strings.Join(byKey[k], ", "), verb, k.kernel, k.feature))
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// guestFeatureChecks are doctor's lines for the guest-kernel features of
// the registered workloads, judged on the default guest kernel of cells
// on a host whose /boot image is hostImage ("" = none).
func guestFeatureChecks(hostImage string) []Check {
	k := guestKernelOf(&scenarios.Cell{}, hostImage)
	var out []Check
	for _, f := range workload.AllGuestFeatures() {
		c := Check{Name: f.Name, OK: !k.lacks(f.Since), Warn: true}
		switch {
		case !k.ok:
			c.OK, c.Detail = true, fmt.Sprintf("needs Linux %s+ in the guest; default guest kernel %s: version unknown", f.Since, k.desc)
		case c.OK:
			c.Detail = fmt.Sprintf("needs Linux %s+ in the guest; default guest kernel %s has it", f.Since, k.desc)
		default:
			c.Detail = fmt.Sprintf("needs Linux %s+ in the guest; default guest kernel %s lacks it", f.Since, k.desc)
			c.Fix = fmt.Sprintf("cells that need it read n/a (%s) unless guest.kernel names Linux %s+, e.g. guest.kernel.debian: \"6.12\"", f.Why, f.Since)
		}
		out = append(out, c)
	}
	return out
}

// CheckGuestKernel refuses a cell whose guest.kernel names files that are
// not there: an image that is no x86 kernel image, modules that are no
// directory. The guest image is built at the first boot, after the run
// directory exists: Preflight, plan and lab runs check it first.
func CheckGuestKernel(c *scenarios.Cell) error {
	g := c.Guest.Kernel
	if g.Image != "" {
		why := ""
		switch st, err := os.Stat(g.Image); {
		case err != nil:
			why = strings.TrimPrefix(err.Error(), "stat "+g.Image+": ")
		case !st.Mode().IsRegular():
			why = "not a file"
		default:
			if _, err := vmimages.KernelRelease(g.Image); err != nil {
				why = "no x86 bzImage setup header"
			}
		}
		if why != "" {
			return fault.Input("guest.kernel.image %s: %s; give a built kernel (arch/x86/boot/bzImage or /boot/vmlinuz-*), or guest.kernel.debian: \"6.1\" (cell %s)", g.Image, why, c.Name)
		}
	}
	if g.Modules != "" {
		if st, err := os.Stat(g.Modules); err != nil || !st.IsDir() {
			return fault.Input("guest.kernel.modules %s is not a directory; give the directory make modules_install wrote (INSTALL_MOD_PATH/lib/modules/RELEASE), or leave it out (cell %s)", g.Modules, c.Name)
		}
	}
	return nil
}
