package labvm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/vmimages"
	"github.com/vnetbench/vnetbench/vmimages/cpio"
)

// fakeModules writes a modules directory with modules.dep and
// modules.builtin like depmod's output.
func fakeModules(t *testing.T) string {
	dir := t.TempDir()
	files := map[string]string{
		"modules.dep": "kernel/drivers/net/tun.ko:\n" +
			"kernel/drivers/vhost/vhost_net.ko: kernel/drivers/net/tun.ko kernel/drivers/net/tap.ko kernel/drivers/vhost/vhost.ko kernel/drivers/vhost/vhost_iotlb.ko\n" +
			"kernel/drivers/vhost/vhost.ko: kernel/drivers/vhost/vhost_iotlb.ko\n" +
			"kernel/drivers/vhost/vhost_iotlb.ko:\n" +
			"kernel/drivers/net/tap.ko:\n" +
			"kernel/net/core/pktgen.ko:\n" +
			"kernel/fs/9p/9p.ko: kernel/fs/netfs/netfs.ko kernel/fs/fscache/fscache.ko kernel/net/9p/9pnet.ko\n" +
			"kernel/fs/netfs/netfs.ko:\n" +
			"kernel/fs/fscache/fscache.ko: kernel/fs/netfs/netfs.ko\n" +
			"kernel/net/9p/9pnet.ko:\n",
		"modules.builtin": "kernel/drivers/virtio/virtio_pci.ko\nkernel/net/packet/af_packet.ko\n",
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range strings.Split(files["modules.dep"], "\n") {
		if m, _, ok := strings.Cut(l, ":"); ok {
			p := filepath.Join(dir, m)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte("ko:"+filepath.Base(m)), 0o644)
		}
	}
	return dir
}

// TestResolveModules: the lab resolves its modules with vmimages' index
// (modules.dep here) but tolerates absent requested modules: they are
// listed as missing for the caller to judge (Run refuses a kernel without
// the 9p stack), while built-in ones are skipped silently.
func TestResolveModules(t *testing.T) {
	_, order, missing, err := resolveModules(fakeModules(t), []string{"virtio_pci", "9p", "vhost_net", "pktgen", "tun", "no-such_mod", "no_such_mod"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range order {
		names = append(names, m.Name)
	}
	want := []string{"9pnet", "netfs", "fscache", "9p", "tap", "tun", "vhost_iotlb", "vhost", "vhost_net", "pktgen"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("order %v, want %v", names, want)
	}
	if !reflect.DeepEqual(missing, []string{"no_such_mod"}) {
		t.Errorf("missing %v", missing)
	}
}

// TestResolveModulesErrors: a directory without modules is bad input with
// the lab's hint (the modules: key). (An absent dependency of a present
// module is an error: vmimages' TestResolveAvailable.)
func TestResolveModulesErrors(t *testing.T) {
	_, _, _, err := resolveModules(t.TempDir(), LabModules)
	if !errors.Is(err, fault.ErrInput) || !strings.HasPrefix(err.Error(), "lab: ") || !strings.Contains(err.Error(), "no kernel modules under") || !strings.Contains(err.Error(), "as modules:") {
		t.Errorf("empty dir: err %v, want a lab InputError with the modules: hint", err)
	}
}

// TestResolveModulesAllBuiltin: a kernel built with everything in (as
// runner/kbuild builds it) has a modules directory with only
// modules.builtin: nothing to load, and only what is neither built in nor
// a module is missing.
func TestResolveModulesAllBuiltin(t *testing.T) {
	dir := t.TempDir()
	builtin := "kernel/drivers/net/tun.ko\nkernel/drivers/vhost/vhost_net.ko\nkernel/net/core/pktgen.ko\nkernel/fs/9p/9p.ko\nkernel/net/9p/9pnet_virtio.ko\n"
	if err := os.WriteFile(filepath.Join(dir, "modules.builtin"), []byte(builtin), 0o644); err != nil {
		t.Fatal(err)
	}
	_, order, missing, err := resolveModules(dir, []string{"tun", "vhost_net", "pktgen", "9p", "9pnet_virtio", "tap"})
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != 0 || !slices.Equal(missing, []string{"tap"}) {
		t.Errorf("order %v, missing %v; want nothing to load and only tap missing", order, missing)
	}
}

// TestResolveModulesDebian resolves the lab's modules from the .modinfo
// sections of an unpacked Debian kernel package (it ships no modules.dep;
// the same package as the lab e2e tests', fetched once into the cache).
func TestResolveModulesDebian(t *testing.T) {
	k := fetchKernel(t, e2eLabKernel)
	_, order, missing, err := resolveModules(k.Modules, LabModules)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) != 0 {
		t.Errorf("missing %v", missing)
	}
	pos := map[string]int{}
	for i, m := range order {
		pos[m.Name] = i
	}
	for _, p := range [][2]string{{"vhost", "vhost_net"}, {"9pnet", "9pnet_virtio"}, {"netfs", "9p"}, {"virtio_ring", "virtio_net"}} {
		i, ok1 := pos[p[0]]
		j, ok2 := pos[p[1]]
		if !ok1 || !ok2 || i >= j {
			t.Errorf("%s must load before %s: %v", p[0], p[1], order)
		}
	}
}

func TestInitramfs(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "vnetbench")
	os.WriteFile(bin, staticELF(t), 0o755)
	ir := Initramfs{Binary: bin, Modules: fakeModules(t), Load: []string{"vhost_net", "virtio_pci", "gone"},
		Config: InitConfig{Mode: "lab", RootTag: "hostroot", Args: []string{"run", "x"}}}
	out := filepath.Join(dir, "i.cpio")
	cfg, err := ir.Build(out)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	ents, err := cpio.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]cpio.Entry{}
	for _, e := range ents {
		got[e.Name] = e
	}
	if e, ok := got["init"]; !ok || !bytes.Equal(e.Data, staticELF(t)) || e.Mode&0o111 == 0 {
		t.Errorf("init entry %+v", e)
	}
	if e, ok := got["dev/console"]; !ok || e.Rmajor != 5 || e.Rminor != 1 {
		t.Errorf("dev/console %+v", e)
	}
	var lj InitConfig
	if err := json.Unmarshal(got["lab.json"].Data, &lj); err != nil {
		t.Fatal(err)
	}
	wantMods := []string{"/lib/modules/tap.ko", "/lib/modules/tun.ko", "/lib/modules/vhost_iotlb.ko", "/lib/modules/vhost.ko", "/lib/modules/vhost_net.ko"}
	if !reflect.DeepEqual(lj.Modules, wantMods) || !reflect.DeepEqual(cfg.Modules, wantMods) {
		t.Errorf("modules %v", lj.Modules)
	}
	if !reflect.DeepEqual(lj.Missing, []string{"gone"}) || lj.Mode != "lab" || lj.Args[0] != "run" {
		t.Errorf("lab.json %+v", lj)
	}
	if string(got["lib/modules/vhost.ko"].Data) != "ko:vhost.ko" {
		t.Errorf("module content %q", got["lib/modules/vhost.ko"].Data)
	}
}

func TestFollowerEvents(t *testing.T) {
	p := filepath.Join(t.TempDir(), "console.log")
	var out bytes.Buffer
	vm := &qemu.VM{Config: qemu.Config{ConsoleLog: p}, Launched: time.Now()}
	f := newFollower(vm.Console(), &out, "stock")
	defer f.close()
	if evs := f.poll(); evs != nil {
		t.Fatalf("events before the file exists: %v", evs)
	}
	os.WriteFile(p, []byte("[    0.1] Linux version 6.1\r\n\nVNBLAB {\"ev\":\"init\",\"uptime\":5.3,\"kernel\":\"6.1.0\"}\nhello from ins"), 0o644)
	evs := f.poll()
	if len(evs) != 1 || evs[0].Ev != "init" || evs[0].Uptime != 5.3 || evs[0].Kernel != "6.1.0" {
		t.Fatalf("events %+v", evs)
	}
	fh, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	fh.WriteString("ide\nVNBLAB {\"ev\":\"exit\",\"code\":2}\nVNBLAB {broken\n")
	fh.Close()
	evs = f.poll()
	if len(evs) != 1 || evs[0].Ev != "exit" || evs[0].Code != 2 {
		t.Fatalf("events %+v", evs)
	}
	want := "[lab stock] [    0.1] Linux version 6.1\n[lab stock] hello from inside\n[lab stock] VNBLAB {broken\n"
	if out.String() != want {
		t.Errorf("forwarded:\n%q\nwant\n%q", out.String(), want)
	}
}

func TestRunInputErrors(t *testing.T) {
	for _, c := range []Config{
		{Label: "", RunDir: "/x"},
		{Label: "a/b", RunDir: "/x"},
		{Label: "stock"},
		{Label: "stock", RunDir: t.TempDir(), Binary: "/bin/true"},
	} {
		_, err := Run(t.Context(), c)
		if !errors.Is(err, fault.ErrInput) {
			t.Errorf("%+v: err %v, want bad input", c, err)
		}
	}
}

// The inner command's environment is what Config.Env says, checked
// before anything is built; the host's environment does not leak in.
func TestRunEnvChecked(t *testing.T) {
	for _, env := range []string{"NOEQUALS", "=x"} {
		_, err := Run(t.Context(), Config{Label: "stock", RunDir: t.TempDir(), Env: []string{"A=1", env}})
		if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "want KEY=VALUE") {
			t.Errorf("Env %q: err %v, want bad input asking for KEY=VALUE", env, err)
		}
	}
}

func TestNeeded(t *testing.T) {
	if Needed(Kernel{}) || !Needed(Kernel{Debian: "6.1.0-47-amd64"}) || !Needed(Kernel{Image: "/boot/vmlinuz"}) {
		t.Error("Needed")
	}
}

// fakeDebianCache unpacks empty stand-ins of Debian kernel packages
// (linux-image-REL-unsigned with boot/vmlinuz-REL and lib/modules/REL) into
// a cache directory, as vmimages.FetchDebianKernel leaves them.
func fakeDebianCache(t *testing.T, releases ...string) string {
	t.Helper()
	cache := t.TempDir()
	for _, rel := range releases {
		pkg := filepath.Join(cache, "kernels/debian/linux-image-"+rel+"-unsigned")
		for _, f := range []string{"boot/vmlinuz-" + rel, "lib/modules/" + rel + "/modules.order"} {
			os.MkdirAll(filepath.Dir(filepath.Join(pkg, f)), 0o755)
			if err := os.WriteFile(filepath.Join(pkg, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return cache
}

func TestDebianLabVersion(t *testing.T) {
	cache := fakeDebianCache(t, "6.1.0-9-amd64", "6.1.0-47-amd64", "6.1.0-50-cloud-amd64", "6.10.0-1-amd64",
		"6.12.9+deb12-amd64", "6.12.117+deb12-amd64", "6.12.200+deb12-cloud-amd64")
	for in, want := range map[string]string{
		"6.1": "6.1.0-47-amd64", "6.1.0-47": "6.1.0-47-amd64", "6.1.0-47-amd64": "6.1.0-47-amd64",
		"6.1.0-47-rt-amd64": "6.1.0-47-rt-amd64", "6.10": "6.10.0-1-amd64", "6.1.0": "6.1.0-47-amd64",
		"6.12": "6.12.117+deb12-amd64", "6.12.9": "6.12.9+deb12-amd64", "6.12.117+deb12": "6.12.117+deb12-amd64",
		"6.12.117+deb12-amd64": "6.12.117+deb12-amd64",
	} {
		got, err := debianLabVersion(t.Context(), in, cache)
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"6.1.0-47-cloud-amd64", "6.12.117+deb12-cloud-amd64", "six", "6.12.117+bpo", "6"} {
		_, err := debianLabVersion(t.Context(), in, cache)
		if !errors.Is(err, fault.ErrInput) {
			t.Errorf("%s: err %v, want bad input", in, err)
		}
	}
}

// TestDebianLabVersionNotFound: a series neither cached nor known to apt,
// and a host without apt-cache, are lab input errors with the lab's fixes.
func TestDebianLabVersionNotFound(t *testing.T) {
	cache := fakeDebianCache(t, "6.1.0-47-amd64")
	t.Run("apt", func(t *testing.T) {
		testenv.NeedCommand(t, "apt-cache", "apt")
		_, err := debianLabVersion(t.Context(), "2.9", cache)
		if !errors.Is(err, fault.ErrInput) || err.Error() != "lab: no Debian 2.9 kernel (linux-image-2.9*-amd64-unsigned) cached or known to apt; run apt-get update (6.12 comes from bookworm-security) or give image:/modules:" {
			t.Errorf("err = %v", err)
		}
	})
	t.Setenv("PATH", t.TempDir())
	_, err := debianLabVersion(t.Context(), "2.9", cache)
	if !errors.Is(err, fault.ErrInput) || err.Error() != "lab: Debian kernel 2.9: apt-cache not found; give a full ABI (e.g. 6.12.117+deb12 or 6.1.0-47) or image:/modules:" {
		t.Errorf("without apt-cache: err = %v", err)
	}
	if got, err := debianLabVersion(t.Context(), "6.1", cache); err != nil || got != "6.1.0-47-amd64" {
		t.Errorf("a cached series needs no apt-cache: got %q, %v", got, err)
	}
}

func TestErrors(t *testing.T) {
	e := &Error{Label: "stock", Phase: "boot", Err: errors.New("timeout after 2m0s"), Console: "/r/lab/stock/console.log", Tail: "[ 1.0] Linux version"}
	if got := e.Error(); !strings.HasPrefix(got, "lab stock: boot: timeout after 2m0s\nlast console lines (/r/lab/stock/console.log):\n[ 1.0] Linux version") {
		t.Errorf("Error() = %q", got)
	}
	if !errors.Is(&InnerError{Code: 2}, fault.ErrInput) || errors.Is(&InnerError{Code: 3}, fault.ErrInput) || errors.Is(&InnerError{Code: 3}, fault.ErrCapability) {
		t.Error("InnerError: exit 2 inside is bad input, another status a failure")
	}
	bin := filepath.Join(t.TempDir(), "sh")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	if err := checkBinary(bin); err == nil || !strings.Contains(err.Error(), "cannot run as a VM's /init") {
		t.Errorf("checkBinary(script) = %v", err)
	}
	// A dynamically linked ELF is fine: its libraries go into the initramfs.
	if err := checkBinary("/bin/ls"); err != nil {
		t.Errorf("checkBinary(/bin/ls) = %v", err)
	}
}

// TestRunRefusesKernelWithout9p uses Debian's cloud kernel (no 9p; the lab
// e2e tests' nested guest kernel, fetched once into the cache): lab.Run
// must refuse it before booting anything.
func TestRunRefusesKernelWithout9p(t *testing.T) {
	k := fetchKernel(t, e2eGuestKernel)
	bin := filepath.Join(t.TempDir(), "static")
	// Any static ELF will do: Run stops before using it.
	if err := os.WriteFile(bin, staticELF(t), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Run(t.Context(), Config{Label: "stock", RunDir: t.TempDir(), Binary: bin, Kernel: Kernel{Image: k.Image, Modules: k.Modules}})
	if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "9p") {
		t.Fatalf("err = %v, want bad input about 9p", err)
	}
}

// staticELF returns a minimal static x86-64 ELF header (no PT_INTERP).
func staticELF(t *testing.T) []byte {
	t.Helper()
	b := make([]byte, 64)
	copy(b, "\x7fELF\x02\x01\x01")
	b[16] = 2    // ET_EXEC
	b[18] = 0x3e // EM_X86_64
	b[20] = 1    // EV_CURRENT
	b[52] = 64   // e_ehsize
	return b
}

// A dynamically linked vnetbench (go build or go install with cgo on) is
// the lab's /init with its ELF interpreter and libraries beside it, at the
// paths the loader opens (/bin/ls stands in for it).
func TestInitramfsDynamicBinary(t *testing.T) {
	libs, err := vmimages.SharedLibs("/bin/ls")
	if err != nil || len(libs) == 0 {
		testenv.NotApplicable(t, fmt.Sprintf("/bin/ls is not a dynamic ELF here (libs %v, %v)", libs, err))
	}
	out := filepath.Join(t.TempDir(), "i.cpio")
	if _, err := (Initramfs{Binary: "/bin/ls", Config: InitConfig{Mode: "lab"}}).Build(out); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	ents, err := cpio.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, e := range ents {
		got[e.Name] = e.Data
	}
	ls, _ := os.ReadFile("/bin/ls")
	if !bytes.Equal(got["init"], ls) {
		t.Error("init is not the binary")
	}
	for _, l := range libs {
		want, _ := os.ReadFile(l)
		if data, ok := got[strings.TrimPrefix(l, "/")]; !ok || !bytes.Equal(data, want) {
			t.Errorf("%s not in the initramfs", l)
		}
	}
}

// A lab VM writes only its own output directory, not the rest of the run
// directory nor anything of the cache: not the kbuild trees, where the
// host later runs make as root, nor its kernels, nor the images the host
// boots (before: the initramfs and vmlinux directories were read-write,
// so a kernel under test could replace the image the next run boots).
// The images the run inside builds go to a tmpfs of the lab.
func TestShareList(t *testing.T) {
	c := Config{Label: "stock", RunDir: "/r", OutDir: "/r/lab/stock/run", CacheDir: "/c", Shares: []string{"/src/linux", "/r/x", "/c/kbuild/k1"}}
	got := c.shareList("/r")
	want := []qemu.Share{
		{Tag: "hostroot", Path: "/", ReadOnly: true},
		{Tag: "vnbrun", Path: "/r", ReadOnly: true},
		{Tag: "vnbout", Path: "/r/lab/stock/run"},
		{Tag: "vnbcache", Path: "/c", ReadOnly: true},
		{Tag: "vnbx0", Path: "/src/linux", ReadOnly: true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("shares\n got %+v\nwant %+v", got, want)
	}
	for _, s := range got {
		if !s.ReadOnly && s.Tag != "vnbout" {
			t.Errorf("share %s (%s) is writable", s.Tag, s.Path)
		}
	}
	// Without OutDir (the lab package's own runs) the run directory is
	// read-write; the cache stays read-only.
	c.OutDir = ""
	got = c.shareList("/r")
	if got[1].ReadOnly || slices.ContainsFunc(got, func(s qemu.Share) bool { return s.Tag == "vnbout" }) ||
		!slices.Contains(got, qemu.Share{Tag: "vnbcache", Path: "/c", ReadOnly: true}) {
		t.Errorf("shares without OutDir: %+v", got)
	}
}

// Lab init mounts the shares QEMU exports read-only (the cache with the
// vmlinux a nested guest boots) read-only through the page cache, as the
// host root, and the writable one without it: the host reads what the run
// inside writes there.
func TestShareMount(t *testing.T) {
	c := Config{Label: "stock", RunDir: "/r", OutDir: "/r/lab/stock/run", CacheDir: "/c", Shares: []string{t.TempDir()}}
	shares, _, err := c.shares("/r")
	if err != nil {
		t.Fatal(err)
	}
	want := []InitShare{{Tag: "vnbrun", Path: "/r", ReadOnly: true}, {Tag: "vnbout", Path: "/r/lab/stock/run"},
		{Tag: "vnbcache", Path: "/c", ReadOnly: true}}
	if !slices.Equal(shares[:3], want) {
		t.Fatalf("init shares\n got %+v\nwant %+v...", shares, want)
	}
	for _, s := range shares {
		flags, opts := shareMount(s)
		loose := strings.Contains(opts, "cache=loose")
		if s.ReadOnly != (flags == unix.MS_RDONLY) || s.ReadOnly != loose || !strings.HasPrefix(opts, ninePOpts) {
			t.Errorf("share %s (read-only %v): flags %#x, options %q", s.Tag, s.ReadOnly, flags, opts)
		}
	}
	if _, opts := shareMount(InitShare{Tag: "vnbout", Path: "/o"}); opts != ninePOpts {
		t.Errorf("writable share options %q, want %q", opts, ninePOpts)
	}
}

// The self-test's nested guest boots lab init with the TCG tuning by
// default; a lab VM's own forms are in runner/lab's plan goldens.
func TestInitCmdlineNested(t *testing.T) {
	want := "console=ttyS0 loglevel=4 panic=-1 rdinit=/init mitigations=off tsc=reliable no_timer_check cryptomgr.notests i8042.noaux i8042.nokbd i8042.nopnp audit=0 -- lab-init"
	if got := initCmdline(vmimages.TCGTuning, ""); got != want {
		t.Errorf("initCmdline(TCGTuning, \"\") = %q, want %q", got, want)
	}
}
