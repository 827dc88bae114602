package runner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/scenarios"
)

func expandCells(t *testing.T, src string) []scenarios.Cell {
	t.Helper()
	s, err := scenarios.Load("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s.Expand()
}

// Doctor tells, from the releases alone, which cells will read n/a
// because their guest kernel is older than what their workload needs:
// sockmap cells on a Debian 6.1 guest (named, or the default guest on a
// host without a /boot image of its own, or inside a Debian lab VM), not
// on 6.12, not socat cells.
func TestGuestKernelNotes(t *testing.T) {
	const gen = "generator: {vsock: {transport: loopback, redirector: [socat, sockmap]}}\n"
	want := `tap/vsock-t1/sockmap reads n/a: guest kernel Debian 6.1 has no vsock sockmap (Linux 6.4+); set guest.kernel.debian to a newer series such as "6.12"`
	for _, tc := range []struct {
		name, src, want string
	}{
		{"debian 6.1 guest", "guest: {kernel: {debian: \"6.1\"}}\n" + gen, want},
		{"debian ABI 6.1.0-47", "guest: {kernel: {debian: \"6.1.0-47\"}}\n" + gen, strings.Replace(want, "Debian 6.1 ", "Debian 6.1.0-47 ", 1)},
		{"default guest", gen, want},
		{"lab kernel, default guest", "kernels: [{label: stock, debian: \"6.12\"}]\n" + gen, want},
		{"debian 6.12 guest", "guest: {kernel: {debian: \"6.12\"}}\n" + gen, ""},
		{"no sockmap cell", "guest: {kernel: {debian: \"6.1\"}}\ngenerator: {vsock: {redirector: socat}}\n", ""},
		{"no vsock", "generator: {iperf3: {}}\n", ""},
	} {
		got := strings.Join(guestKernelNotes(expandCells(t, tc.src), ""), "; ")
		if got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	// Doctor's line judges the default guest kernel.
	var line *Check
	for _, c := range guestFeatureChecks("") {
		if c.Name == "vsock sockmap" {
			line = &c
		}
	}
	if line == nil || line.OK || !line.Warn || line.Detail != "needs Linux 6.4+ in the guest; default guest kernel Debian 6.1 lacks it" ||
		!strings.Contains(line.Fix, "guest.kernel.debian: \"6.12\"") {
		t.Errorf("doctor line %+v", line)
	}
}

func TestLinuxVersion(t *testing.T) {
	for s, want := range map[string][2]int{"6.12.117+deb12-cloud-amd64": {6, 12}, "6.1.0-47": {6, 1}, "6.12": {6, 12}, "5.15": {5, 15}} {
		if ma, mi, ok := linuxVersion(s); !ok || ma != want[0] || mi != want[1] {
			t.Errorf("%q: %d.%d %v", s, ma, mi, ok)
		}
	}
	if _, _, ok := linuxVersion("amd64"); ok {
		t.Error("a flavour has no version")
	}
	k := guestKernel{major: 6, minor: 12, ok: true}
	if k.lacks("6.4") || !(guestKernel{major: 6, minor: 1, ok: true}).lacks("6.4") || !(guestKernel{major: 5, minor: 19, ok: true}).lacks("6.4") ||
		(guestKernel{}).lacks("6.4") {
		t.Error("lacks")
	}
}

// A guest.kernel that names files that are not there was found at the
// first boot, after the run directory was made (env.json, an empty
// results.jsonl), while plan and run --dry-run showed the run as fine:
// CheckGuestKernel refuses it, as bad input naming the key and the fix,
// and Preflight does before anything is made.
func TestCheckGuestKernel(t *testing.T) {
	dir := t.TempDir()
	img := make([]byte, 0x1000)
	copy(img[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(img[0x20e:], 0x300)
	copy(img[0x200+0x300:], "6.1.0-test (t@example) #1\x00")
	good, notKernel, mods := filepath.Join(dir, "bzImage"), filepath.Join(dir, "notes.txt"), filepath.Join(dir, "mods")
	os.WriteFile(good, img, 0o644)
	os.WriteFile(notKernel, []byte("not a kernel"), 0o644)
	os.Mkdir(mods, 0o755)
	for _, tc := range []struct {
		image, modules, want string
	}{
		{"", "", ""},
		{good, "", ""},
		{good, mods, ""},
		{filepath.Join(dir, "none"), "", "guest.kernel.image " + filepath.Join(dir, "none") + ": no such file or directory; give a built kernel"},
		{dir, "", "guest.kernel.image " + dir + ": not a file"},
		{notKernel, "", "no x86 bzImage setup header"},
		{good, filepath.Join(dir, "nomods"), "guest.kernel.modules " + filepath.Join(dir, "nomods") + " is not a directory"},
		{good, good, "is not a directory"},
	} {
		c := scenarios.Cell{Name: "tap/iperf3-p1"}
		c.Guest.Kernel = scenarios.Kernel{Image: tc.image, Modules: tc.modules}
		err := CheckGuestKernel(&c)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("image %q modules %q: %v", tc.image, tc.modules, err)
		case tc.want != "" && (!errors.Is(err, fault.ErrInput) || !strings.Contains(fmt.Sprint(err), tc.want) || !strings.Contains(fmt.Sprint(err), "(cell tap/iperf3-p1)")):
			t.Errorf("image %q modules %q: %v, want bad input with %q", tc.image, tc.modules, err, tc.want)
		}
	}
	c := expandCells(t, "name: t\ngenerator: {iperf3: {duration: 1s}}\nguest: {kernel: {image: "+filepath.Join(dir, "none")+"}}\n")
	if err := Preflight(t.Context(), c, nil); !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "guest.kernel.image") {
		t.Errorf("Preflight: %v, want the guest kernel refused first", err)
	}
}
