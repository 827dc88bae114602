package vmimages

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/testenv"
)

// writeKo writes a minimal ELF relocatable with a .modinfo section.
func writeKo(t *testing.T, path, depends string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, fakeModule("depends="+depends+"\x00license=GPL\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// openFake indexes a modules directory without modules.dep: kos maps each
// module's path to its .modinfo "depends=", builtin lists modules.builtin.
func openFake(t *testing.T, kos map[string]string, builtin ...string) *ModuleIndex {
	t.Helper()
	dir := t.TempDir()
	for rel, depends := range kos {
		writeKo(t, filepath.Join(dir, rel), depends)
	}
	os.WriteFile(filepath.Join(dir, "modules.builtin"), []byte(strings.Join(builtin, "\n")+"\n"), 0o644)
	ix, err := OpenModules(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func moduleNames(mods []Module) []string {
	var names []string
	for _, m := range mods {
		names = append(names, m.Name)
	}
	return names
}

// fakeTree is a modules directory without modules.dep (as in a Debian
// package): module path -> .modinfo "depends=". 9p's 9pnet is absent.
var fakeTree = map[string]string{
	"kernel/drivers/net/virtio_net.ko":     "net_failover,virtio,virtio_ring",
	"kernel/drivers/net/net_failover.ko":   "failover",
	"kernel/net/core/failover.ko":          "",
	"kernel/drivers/virtio/virtio.ko":      "",
	"kernel/drivers/virtio/virtio_ring.ko": "virtio",
	"kernel/drivers/net/tun.ko":            "",
	"kernel/drivers/vhost/vhost_net.ko":    "vhost,tun",
	"kernel/drivers/vhost/vhost.ko":        "",
	"kernel/fs/9p/9p.ko":                   "9pnet",
}

func TestResolveFromModinfo(t *testing.T) {
	ix := openFake(t, fakeTree, "kernel/net/packet/af_packet.ko")
	mods, err := ix.Resolve([]string{"virtio-net", "af_packet", "tun", "virtio"})
	if err != nil {
		t.Fatal(err)
	}
	names := moduleNames(mods)
	want := []string{"failover", "net_failover", "virtio", "virtio_ring", "virtio_net", "tun"}
	if !slices.Equal(names, want) {
		t.Errorf("order %v, want %v", names, want)
	}
	if mods[4].Rel != "kernel/drivers/net/virtio_net.ko" {
		t.Errorf("rel %q", mods[4].Rel)
	}
}

func TestResolveFromModulesDep(t *testing.T) {
	dir := t.TempDir()
	dep := "kernel/b.ko: kernel/a.ko\nkernel/c.ko: kernel/b.ko kernel/a.ko\nkernel/a.ko:\n"
	os.WriteFile(filepath.Join(dir, "modules.dep"), []byte(dep), 0o644)
	ix, err := OpenModules(dir)
	if err != nil {
		t.Fatal(err)
	}
	mods, err := ix.Resolve([]string{"c"})
	if err != nil {
		t.Fatal(err)
	}
	if names := moduleNames(mods); !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("order %v", names)
	}
}

func TestMissingModuleIsInputError(t *testing.T) {
	dir := t.TempDir()
	writeKo(t, filepath.Join(dir, "kernel/x.ko"), "nosuchdep")
	ix, err := OpenModules(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ix.Resolve([]string{"x"})
	var ie *fault.InputError
	if !errors.As(err, &ie) || !errors.Is(err, fault.ErrInput) {
		t.Fatalf("err = %v, want InputError", err)
	}
	if !strings.Contains(err.Error(), "module nosuchdep not found") || !strings.Contains(err.Error(), "needed by x") {
		t.Errorf("unclear error: %v", err)
	}
}

func TestSharedLibsIperf3(t *testing.T) {
	bin := "/usr/bin/iperf3"
	if !isFile(bin) {
		testenv.Skip(t, "needs /usr/bin/iperf3 (make deps installs iperf3)")
	}
	libs, err := SharedLibs(bin)
	if err != nil {
		t.Fatal(err)
	}
	var hasInterp, hasLibc, hasIperf bool
	for _, l := range libs {
		hasInterp = hasInterp || strings.Contains(l, "ld-linux")
		hasLibc = hasLibc || filepath.Base(l) == "libc.so.6"
		hasIperf = hasIperf || strings.HasPrefix(filepath.Base(l), "libiperf.so")
	}
	if !hasInterp || !hasLibc || !hasIperf {
		t.Errorf("libs %v: want interpreter, libc and libiperf", libs)
	}
}

func TestStripSignature(t *testing.T) {
	unsigned := fakeModule("depends=\x00")
	if got := StripSignature(unsigned); len(got) != len(unsigned) {
		t.Errorf("unsigned module changed: %d -> %d bytes", len(unsigned), len(got))
	}
	// module_signature{id_type PKCS7, sig_len 5} after a 5-byte "signature".
	signed := append(append(append([]byte(nil), unsigned...), "SIGSG"...), 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 5)
	signed = append(signed, sigMagic...)
	if got := StripSignature(signed); string(got) != string(unsigned) {
		t.Errorf("stripped %d bytes, want the %d-byte module back", len(got), len(unsigned))
	}
	if _, err := modinfo(StripSignature(signed)); err != nil {
		t.Error(err)
	}
	// A garbage trailer leaves the module alone.
	bad := append(append([]byte(nil), unsigned...), 0, 0, 2, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff)
	bad = append(bad, sigMagic...)
	if got := StripSignature(bad); len(got) != len(bad) {
		t.Error("a garbage trailer was cut")
	}
}

// TestResolveAvailable: requested modules the kernel lacks are listed
// (once, canonical names) instead of failing, built-in ones are skipped, and
// an absent dependency of a present module is still bad input (fault.ErrInput).
func TestResolveAvailable(t *testing.T) {
	ix := openFake(t, fakeTree, "kernel/drivers/virtio/virtio_pci.ko")
	if ix.Len() != len(fakeTree) {
		t.Errorf("Len() = %d, want %d", ix.Len(), len(fakeTree))
	}
	mods, missing, err := ix.ResolveAvailable([]string{"virtio-pci", "pktgen", "vhost_net", "no-such", "no_such"})
	if err != nil {
		t.Fatal(err)
	}
	names := moduleNames(mods)
	if !slices.Equal(names, []string{"tun", "vhost", "vhost_net"}) || !slices.Equal(missing, []string{"pktgen", "no_such"}) {
		t.Errorf("order %v missing %v", names, missing)
	}
	_, _, err = ix.ResolveAvailable([]string{"9p"})
	var ie *fault.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "module 9pnet not found") || !strings.Contains(err.Error(), "needed by 9p") {
		t.Errorf("absent dependency: err = %v, want an InputError naming it", err)
	}
	if _, err := ix.Resolve([]string{"pktgen"}); !errors.As(err, &ie) {
		t.Errorf("Resolve of an absent module: err = %v, want an InputError", err)
	}
	empty, err := OpenModules(t.TempDir())
	if err != nil || empty.Len() != 0 {
		t.Errorf("empty directory: Len %d, err %v", empty.Len(), err)
	}
}

// realCompressedTree copies the real Debian 6.12 modules of testdata/modules
// into a modules directory without modules.dep, as Debian's package has it:
// pvpanic-pci.ko.xz as shipped, and pvpanic (its dependency) recompressed
// as .ko.zst here, so both decoders run. It returns the directory and the
// uncompressed pvpanic bytes.
func realCompressedTree(t *testing.T) (dir string, pvpanic []byte) {
	t.Helper()
	dir = t.TempDir()
	sub := filepath.Join(dir, "kernel/drivers/misc/pvpanic")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	xzData, err := os.ReadFile("testdata/modules/pvpanic-pci.ko.xz")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sub, "pvpanic-pci.ko.xz"), xzData, 0o644)
	f, err := os.Open("testdata/modules/pvpanic.ko.xz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pvpanic, err = Decompress(f, "pvpanic.ko.xz")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sub, "pvpanic.ko.zst"), enc.EncodeAll(pvpanic, nil), 0o644)
	enc.Close()
	return dir, pvpanic
}

// TestCompressedModulesReal resolves and reads Debian's real .ko.xz (and a
// .ko.zst made from one): the dependency comes from the decompressed
// .modinfo, the bytes are the ELF module with its signature, which
// StripSignature removes.
func TestCompressedModulesReal(t *testing.T) {
	dir, pvpanic := realCompressedTree(t)
	ix, err := OpenModules(dir)
	if err != nil {
		t.Fatal(err)
	}
	mods, err := ix.Resolve([]string{"pvpanic-pci"})
	if err != nil {
		t.Fatal(err)
	}
	if names := moduleNames(mods); !slices.Equal(names, []string{"pvpanic", "pvpanic_pci"}) {
		t.Fatalf("order %v, want pvpanic before pvpanic_pci", names)
	}
	for _, m := range mods {
		data, err := ix.ReadModule(m.Rel)
		if err != nil {
			t.Fatalf("%s: %v", m.Rel, err)
		}
		info, err := modinfo(data)
		if err != nil {
			t.Fatalf("%s: %v", m.Rel, err)
		}
		if canon(info["name"]) != m.Name || info["vermagic"] == "" || !strings.HasPrefix(info["vermagic"], "6.12.117+deb12-cloud-amd64 ") {
			t.Errorf("%s: modinfo name=%q vermagic=%q", m.Rel, info["name"], info["vermagic"])
		}
		if !bytes.HasSuffix(data, []byte(sigMagic)) {
			t.Errorf("%s: decompressed module has no signature trailer", m.Rel)
		}
		if s := StripSignature(data); len(s) >= len(data) || !bytes.HasPrefix(s, []byte("\x7fELF")) {
			t.Errorf("%s: signature not stripped (%d -> %d bytes)", m.Rel, len(data), len(s))
		}
	}
	if got, _ := ix.ReadModule(mods[0].Rel); !bytes.Equal(got, pvpanic) {
		t.Error("the .ko.zst did not decompress to the bytes it was made from")
	}
	if got, _ := ix.ReadModule(mods[1].Rel); len(got) != 9631 {
		t.Errorf("pvpanic-pci.ko.xz: %d bytes, want 9631 (xz -l)", len(got))
	}
}

// TestCompressedModuleCorrupt: a damaged stream is an error that names the
// file and the format, for each compression (a truncated xz stream too);
// an unknown suffix is bad input (fault.ErrInput).
func TestCompressedModuleCorrupt(t *testing.T) {
	xzData, err := os.ReadFile("testdata/modules/pvpanic-pci.ko.xz")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
		want string // in the error after the file name
	}{
		{"z.ko.zst", []byte("not zstd"), "zstd:"},
		{"x.ko.xz", []byte("not xz at all"), "xz:"},
		{"t.ko.xz", xzData[:len(xzData)/2], "xz:"},
		{"g.ko.gz", []byte("not gzip"), "gzip:"},
	} {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "kernel"), 0o755)
		os.WriteFile(filepath.Join(dir, "kernel", c.name), c.data, 0o644)
		ix, _ := OpenModules(dir)
		_, err := ix.ReadModule("kernel/" + c.name)
		if err == nil || !strings.Contains(err.Error(), c.name) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want the file and %q", c.name, err, c.want)
		}
	}
	_, err = Decompress(bytes.NewReader(xzData), "y.ko.lzma")
	var ie *fault.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "not a kernel module") {
		t.Errorf("unknown suffix: err = %v, want an InputError", err)
	}
}

func TestUncompressedName(t *testing.T) {
	for in, want := range map[string]string{
		"kernel/net/tun.ko.xz":  "kernel/net/tun.ko",
		"kernel/net/tun.ko.zst": "kernel/net/tun.ko",
		"kernel/net/tun.ko.gz":  "kernel/net/tun.ko",
		"kernel/net/tun.ko":     "kernel/net/tun.ko",
		"weird.xz":              "weird.xz",
	} {
		if got := UncompressedName(in); got != want {
			t.Errorf("UncompressedName(%q) = %q, want %q", in, got, want)
		}
	}
}
