package vmimages

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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

func TestResolveFromModinfo(t *testing.T) {
	dir := t.TempDir()
	writeKo(t, filepath.Join(dir, "kernel/drivers/net/virtio_net.ko"), "net_failover,virtio,virtio_ring")
	writeKo(t, filepath.Join(dir, "kernel/drivers/net/net_failover.ko"), "failover")
	writeKo(t, filepath.Join(dir, "kernel/net/core/failover.ko"), "")
	writeKo(t, filepath.Join(dir, "kernel/drivers/virtio/virtio.ko"), "")
	writeKo(t, filepath.Join(dir, "kernel/drivers/virtio/virtio_ring.ko"), "virtio")
	writeKo(t, filepath.Join(dir, "kernel/drivers/net/tun.ko"), "")
	os.WriteFile(filepath.Join(dir, "modules.builtin"), []byte("kernel/net/packet/af_packet.ko\n"), 0o644)
	ix, err := OpenModules(dir)
	if err != nil {
		t.Fatal(err)
	}
	mods, err := ix.Resolve([]string{"virtio-net", "af_packet", "tun", "virtio"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range mods {
		names = append(names, m.Name)
	}
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
	var names []string
	for _, m := range mods {
		names = append(names, m.Name)
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
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
		t.Skip("iperf3 not installed")
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
