package vmimages

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
	var ie *InputError
	if !errors.As(err, &ie) || ie.ExitCode() != 2 {
		t.Fatalf("err = %v, want InputError", err)
	}
	if !strings.Contains(err.Error(), "module nosuchdep not found") || !strings.Contains(err.Error(), "needed by x") {
		t.Errorf("unclear error: %v", err)
	}
}

func TestCompressedModule(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "kernel"), 0o755)
	os.WriteFile(filepath.Join(dir, "kernel/z.ko.zst"), []byte("x"), 0o644)
	ix, _ := OpenModules(dir)
	_, err := ix.Resolve([]string{"z"})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "zst-compressed") {
		t.Fatalf("err = %v", err)
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
// an absent dependency of a present module is still an InputError.
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
	var ie *InputError
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
