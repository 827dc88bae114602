package vmimages

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/vmimages/cpio"
)

// fakeKernel writes a minimal bzImage (just the setup header with a version
// string) and a modules directory with fake modules for BootModules.
func fakeKernel(t *testing.T, release string) (image, modules string) {
	t.Helper()
	dir := t.TempDir()
	img := make([]byte, 0x1000)
	copy(img[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(img[0x20e:], 0x300)
	copy(img[0x200+0x300:], release+" (test@example) #1 SMP\x00")
	image = filepath.Join(dir, "bzImage")
	if err := os.WriteFile(image, img, 0o644); err != nil {
		t.Fatal(err)
	}
	modules = filepath.Join(dir, "lib/modules", release)
	for name, deps := range map[string]string{
		"drivers/virtio/virtio":        "",
		"drivers/virtio/virtio_ring":   "virtio",
		"drivers/virtio/virtio_pci":    "virtio,virtio_ring",
		"drivers/net/virtio_net":       "virtio,virtio_ring,net_failover",
		"drivers/net/net_failover":     "failover",
		"net/core/failover":            "",
		"drivers/char/virtio_console":  "virtio,virtio_ring",
		"net/core/pktgen":              "",
		"drivers/net/unrelated_driver": "",
	} {
		writeKo(t, filepath.Join(modules, "kernel", name+".ko"), deps)
	}
	return image, modules
}

func fakeAgent(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "vnetbench")
	if err := os.WriteFile(p, fakeModule("not really an agent\x00"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestKernelRelease(t *testing.T) {
	img, _ := fakeKernel(t, "6.1.0-99-test")
	rel, err := KernelRelease(img)
	if err != nil || rel != "6.1.0-99-test" {
		t.Fatalf("KernelRelease = %q, %v", rel, err)
	}
}

func TestBuildReproducible(t *testing.T) {
	img, mods := fakeKernel(t, "6.1.0-99-test")
	agent := fakeAgent(t)
	opts := func() BuildOptions {
		return BuildOptions{Kernel: img, Modules: mods, Agent: agent, ExtraModules: []string{"pktgen"}, CacheDir: t.TempDir()}
	}
	a, err := Build(t.Context(), opts())
	if err != nil {
		t.Fatal(err)
	}
	// Touch every input's mtime: content addressing must ignore it.
	filepath.Walk(mods, func(p string, fi os.FileInfo, err error) error {
		os.Chtimes(p, fi.ModTime().Add(3600e9), fi.ModTime().Add(3600e9))
		return nil
	})
	b, err := Build(t.Context(), opts())
	if err != nil {
		t.Fatal(err)
	}
	ab, _ := os.ReadFile(a.Initramfs)
	bb, _ := os.ReadFile(b.Initramfs)
	if !bytes.Equal(ab, bb) || a.Hash != b.Hash {
		t.Fatalf("two builds differ: %s (%d B) vs %s (%d B)", a.Hash, len(ab), b.Hash, len(bb))
	}
	if filepath.Base(a.Initramfs) != filepath.Base(b.Initramfs) || !strings.Contains(a.Initramfs, a.Hash[:24]) {
		t.Errorf("initramfs not named by content: %s, %s", a.Initramfs, b.Initramfs)
	}
	// BootModules in order, each after its dependencies, each once.
	wantMods := []string{"virtio", "virtio_ring", "virtio_pci", "failover", "net_failover", "virtio_net", "virtio_console", "pktgen"}
	if strings.Join(a.Modules, " ") != strings.Join(wantMods, " ") {
		t.Errorf("modules %v, want %v", a.Modules, wantMods)
	}

	entries, err := cpio.Read(bytes.NewReader(ab))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]cpio.Entry{}
	for _, e := range entries {
		files[e.Name] = e
	}
	if _, ok := files["init"]; !ok {
		t.Error("no /init in the archive")
	}
	if _, ok := files["lib/modules/6.1.0-99-test/kernel/drivers/net/unrelated_driver.ko"]; ok {
		t.Error("a module nobody asked for is in the archive")
	}
	list := string(files["etc/vnb/modules"].Data)
	if !strings.HasPrefix(list, "kernel/drivers/virtio/virtio.ko\n") || !strings.HasSuffix(list, "kernel/net/core/pktgen.ko\n") {
		t.Errorf("etc/vnb/modules:\n%s", list)
	}
	if _, ok := files["dev/console"]; !ok {
		t.Error("no dev/console node (the kernel needs it for init's stdio)")
	}

	// A second build into the same cache reuses the file.
	o := opts()
	o.CacheDir = filepath.Dir(filepath.Dir(a.Initramfs))
	c, err := Build(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Cached || c.Initramfs != a.Initramfs {
		t.Errorf("rebuild with the same inputs: cached=%v path=%s, want the cached %s", c.Cached, c.Initramfs, a.Initramfs)
	}
	// Changing an input changes the hash.
	os.WriteFile(agent, fakeModule("another agent\x00"), 0o755)
	d, err := Build(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if d.Hash == a.Hash || d.Cached {
		t.Error("a changed agent did not change the image")
	}
}

func TestBuildOutDir(t *testing.T) {
	img, mods := fakeKernel(t, "6.1.0-99-test")
	out := filepath.Join(t.TempDir(), "out")
	im, err := Build(t.Context(), BuildOptions{Kernel: img, Modules: mods, Agent: fakeAgent(t), CacheDir: t.TempDir(), OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"vmlinuz", "initramfs.cpio", "image.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if im.Kernel != filepath.Join(out, "vmlinuz") {
		t.Errorf("Kernel = %s", im.Kernel)
	}
}

// Bad input gives one clear line and exit code 2.
func TestBuildErrors(t *testing.T) {
	img, mods := fakeKernel(t, "6.1.0-99-test")
	agent := fakeAgent(t)
	notKernel := filepath.Join(t.TempDir(), "notakernel")
	os.WriteFile(notKernel, []byte("hello"), 0o644)
	for _, tc := range []struct {
		name string
		o    BuildOptions
		want string
	}{
		{"missing kernel", BuildOptions{Kernel: "/nonexistent/bzImage", Modules: mods}, "kernel image /nonexistent/bzImage: no such file or directory; pass --kernel"},
		{"not a bzImage", BuildOptions{Kernel: notKernel, Modules: mods}, "is not an x86 bzImage"},
		{"missing modules dir", BuildOptions{Kernel: img, Modules: "/nonexistent/mods"}, "modules directory /nonexistent/mods does not exist"},
		{"missing module", BuildOptions{Kernel: img, Modules: mods, ExtraModules: []string{"vhost_net"}}, "module vhost_net not found in"},
		{"missing agent", BuildOptions{Kernel: img, Modules: mods, Agent: "/nonexistent/agent"}, "agent binary /nonexistent/agent"},
		{"agent not an ELF", BuildOptions{Kernel: img, Modules: mods, Agent: notKernel}, "notakernel is not an ELF executable this machine can run; pass a vnetbench binary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.o.Agent == "" {
				tc.o.Agent = agent
			}
			tc.o.CacheDir = t.TempDir()
			_, err := Build(context.Background(), tc.o)
			var ie *fault.InputError
			if !errors.As(err, &ie) || !errors.Is(err, fault.ErrInput) {
				t.Fatalf("err = %v, want an InputError (exit 2)", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line containing %q", msg, tc.want)
			}
		})
	}
}

func TestCmdline(t *testing.T) {
	c, err := ParseCmdline("BOOT_IMAGE=x console=ttyS0 vnb.ip=10.0.0.2/24 vnb.mac=52:54:00:12:34:56 vnb.gw=10.0.0.1 vnb.mtu=9000 vnb.sink=flow-count vnb.nic=52:54:00:12:34:57,10.0.1.2/24 quiet")
	if err != nil {
		t.Fatal(err)
	}
	if c.IP.String() != "10.0.0.2/24" || c.MAC.String() != "52:54:00:12:34:56" || c.Gateway.String() != "10.0.0.1" || c.MTU != 9000 || c.Sink != SinkFlowCount {
		t.Errorf("parsed %+v", c)
	}
	if len(c.NICs) != 1 || c.NICs[0].MAC.String() != "52:54:00:12:34:57" || c.NICs[0].IP.String() != "10.0.1.2/24" {
		t.Errorf("vnb.nic parsed as %+v", c.NICs)
	}
	back, err := ParseCmdline(c.Cmdline(TCGCmdline))
	if err != nil || back.Params() != c.Params() {
		t.Errorf("round trip: %q vs %q (%v)", back.Params(), c.Params(), err)
	}
	if want := "console=ttyS0 quiet panic=-1 oops=panic vnb.ip=10.0.0.2/24 vnb.mac=52:54:00:12:34:56"; !strings.HasPrefix(c.Cmdline(""), want+" ") {
		t.Errorf("Cmdline(\"\") = %q, want it to start %q", c.Cmdline(""), want)
	}
	for _, bad := range []string{"vnb.ip=10.0.0.2", "vnb.mac=zz", "vnb.sink=teleport", "vnb.unknown=1", "vnb.mtu=big",
		"vnb.nic=52:54:00:12:34:57", "vnb.nic=zz,10.0.1.2/24", "vnb.nic=52:54:00:12:34:57,10.0.1.2"} {
		if _, err := ParseCmdline(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestSplitDebianVersion(t *testing.T) {
	for in, want := range map[string][2]string{
		"":                     {"", "cloud-amd64"},
		"6.1.0-50":             {"6.1.0-50", "cloud-amd64"},
		"6.1.0-50-amd64":       {"6.1.0-50", "amd64"},
		"6.1.0-50-cloud-amd64": {"6.1.0-50", "cloud-amd64"},
		"amd64":                {"", "amd64"},
		"6.12.117+deb12":       {"6.12.117+deb12", "cloud-amd64"},
		"6.12.117+deb12-amd64": {"6.12.117+deb12", "amd64"},
		"6.12-rt-amd64":        {"6.12", "rt-amd64"},
	} {
		abi, fl := splitDebianVersion(in)
		if abi != want[0] || fl != want[1] {
			t.Errorf("%q -> %q %q, want %q", in, abi, fl, want)
		}
	}
	if !abiLess("6.1.0-9", "6.1.0-47") || abiLess("6.1.0-50", "6.1.0-47") {
		t.Error("abiLess is not numeric")
	}
}

// The same with Debian's real kernel and modules, iperf3 and its libraries.
func TestBuildReproducibleDebianKernel(t *testing.T) {
	k := testKernel(t)
	agent := fakeAgent(t)
	var imgs [2]*Image
	for i := range imgs {
		var err error
		imgs[i], err = Build(t.Context(), BuildOptions{Kernel: k.Image, Modules: k.Modules, Agent: agent,
			ExtraModules: []string{"pktgen", "vhost_net", "tun"}, Iperf3: isFile("/usr/bin/iperf3"), CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
	}
	a, _ := os.ReadFile(imgs[0].Initramfs)
	b, _ := os.ReadFile(imgs[1].Initramfs)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("two builds differ: %d vs %d bytes", len(a), len(b))
	}
	t.Logf("%s: %d bytes, modules %v", imgs[0].Hash[:16], len(a), imgs[0].Modules)
}

func TestPruneCache(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour)
	var paths []string
	for i := 0; i < keepImages+5; i++ {
		p := filepath.Join(dir, fmt.Sprintf("initramfs-%024x.cpio", i))
		os.WriteFile(p, nil, 0o644)
		os.Chtimes(p, base.Add(time.Duration(i)*time.Second), base.Add(time.Duration(i)*time.Second))
		paths = append(paths, p)
	}
	os.WriteFile(filepath.Join(dir, "unrelated"), nil, 0o644)
	// Not vnetbench's: a name it does not give, a link (even of its
	// names), both older than every image.
	mine := filepath.Join(dir, "initramfs-mine.cpio")
	os.WriteFile(mine, nil, 0o644)
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, []byte("keep"), 0o644)
	link := filepath.Join(dir, fmt.Sprintf("initramfs-%024x.cpio", 999))
	os.Symlink(target, link)
	for _, p := range []string{mine, link} {
		old := base.Add(-time.Hour)
		os.Chtimes(p, old, old)
	}
	pruneCache(dir, paths[0]) // the oldest is the one just written: kept
	for _, p := range []string{mine, link, target} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("pruned %s, not vnetbench's: %v", p, err)
		}
	}
	os.Remove(mine)
	os.Remove(link)
	left, _ := filepath.Glob(filepath.Join(dir, "initramfs-*.cpio"))
	if len(left) != keepImages {
		t.Errorf("%d files left, want %d", len(left), keepImages)
	}
	if _, err := os.Stat(paths[0]); err != nil {
		t.Error("pruned the image just written")
	}
	if _, err := os.Stat(paths[1]); err == nil {
		t.Error("kept the least recently used image")
	}
	if _, err := os.Stat(filepath.Join(dir, "unrelated")); err != nil {
		t.Error("pruned a file that is not an image")
	}
}

// Programs: a workload's host programs go into /usr/bin with their shared
// libraries; one missing on the host is bad input naming it.
func TestBuildPrograms(t *testing.T) {
	img, mods := fakeKernel(t, "6.1.0-99-test")
	bin := t.TempDir()
	// A stand-in program: a copy of a dynamically linked host binary.
	src := "/usr/bin/iperf3"
	if !isFile(src) {
		src = "/bin/ls"
	}
	data, err := os.ReadFile(src)
	if err != nil {
		testenv.Skip(t, "needs a dynamically linked host binary (/bin/ls)")
	}
	os.WriteFile(filepath.Join(bin, "vnbtoy"), data, 0o755)
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	im, err := Build(t.Context(), BuildOptions{Kernel: img, Modules: mods, Agent: fakeAgent(t), CacheDir: t.TempDir(), Programs: []string{"vnbtoy"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(im.Programs, ",") != "vnbtoy" || im.Iperf3 {
		t.Errorf("programs %v iperf3 %v", im.Programs, im.Iperf3)
	}
	b, _ := os.ReadFile(im.Initramfs)
	entries, err := cpio.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var got, libs bool
	for _, e := range entries {
		got = got || e.Name == "usr/bin/vnbtoy" && bytes.Equal(e.Data, data)
		libs = libs || strings.Contains(e.Name, "libc.so")
	}
	if !got || !libs {
		t.Errorf("usr/bin/vnbtoy in the archive: %v, libc: %v", got, libs)
	}
	_, err = Build(t.Context(), BuildOptions{Kernel: img, Modules: mods, Agent: fakeAgent(t), CacheDir: t.TempDir(), Programs: []string{"vnb-no-such-program"}})
	var ie *fault.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "vnb-no-such-program is not installed on the host") {
		t.Errorf("missing program: %v", err)
	}
}

// A dynamically linked agent (what go build or go install makes when cgo
// is on) goes into the image with its ELF interpreter and libraries at the
// paths the loader opens. iperf3 stands in for it here; cmd/vnetbench's
// TestRunQuickstartE2E runs a real one (go install's) as the guest's /init.
func TestBuildDynamicAgent(t *testing.T) {
	const bin = "/usr/bin/iperf3"
	if !isFile(bin) {
		testenv.Skip(t, "needs a dynamic binary (/usr/bin/iperf3; make deps installs iperf3)")
	}
	libs, err := SharedLibs(bin)
	if err != nil || len(libs) < 2 {
		t.Fatalf("SharedLibs(%s) = %v, %v: want an interpreter and libc", bin, libs, err)
	}
	img, mods := fakeKernel(t, "6.1.0-99-test")
	im, err := Build(t.Context(), BuildOptions{Kernel: img, Modules: mods, Agent: bin, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(im.Initramfs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := cpio.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, e := range entries {
		got[e.Name] = e.Data
	}
	want, _ := os.ReadFile(bin)
	if !bytes.Equal(got["init"], want) {
		t.Errorf("init is not %s", bin)
	}
	for _, l := range libs {
		data, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := got[strings.TrimPrefix(l, "/")]; !ok || !bytes.Equal(e, data) {
			t.Errorf("%s missing from the initramfs (or not its content)", l)
		}
	}
}
