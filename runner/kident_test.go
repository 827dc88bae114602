package runner

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/vnetbench/vnetbench/internal/results"
)

// The identity of a kernel from a /proc, /sys and /lib/modules tree: the
// banner, the config's hash (the same from /proc/config.gz and from
// /boot/config-RELEASE), and per module loaded/built-in/not loaded with
// srcversion and the build-id from the module's notes (a real note file:
// /sys/kernel/notes of the CI machine, whose first note is the GNU
// build-id; the module's copy has the Linux notes first).
func TestKernelIdentity(t *testing.T) {
	notes, err := os.ReadFile("testdata/sys-kernel-notes.bin")
	if err != nil {
		t.Fatal(err)
	}
	const wantID = "85c7e4e2ed76f4417e8aaad7c6b040d2bb897a26"
	if got := noteBuildID(notes); got != wantID {
		t.Fatalf("build-id of the real note = %q, want %s", got, wantID)
	}
	// The same notes with the GNU one last.
	reordered := append(append([]byte(nil), notes[0x24:]...), notes[:0x24]...)
	if got := noteBuildID(reordered); got != wantID {
		t.Errorf("build-id after other notes = %q, want %s", got, wantID)
	}
	for _, bad := range [][]byte{nil, notes[:20], {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 3, 0, 0, 0}} {
		if got := noteBuildID(bad); got != "" {
			t.Errorf("noteBuildID(%x) = %q, want none", bad, got)
		}
	}

	config := []byte("CONFIG_TUN=m\nCONFIG_VHOST_NET=m\nCONFIG_NET_PKTGEN=m\n")
	sum := sha256.Sum256(config)
	const rel = "6.1.0-41-amd64"
	write := func(root, p string, b []byte) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fromProc, fromBoot := t.TempDir(), t.TempDir()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(config)
	zw.Close()
	write(fromProc, "proc/config.gz", gz.Bytes())
	write(fromBoot, "boot/config-"+rel, config)
	for _, root := range []string{fromProc, fromBoot} {
		write(root, "proc/version", []byte("Linux version 6.1.0-41-amd64 (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian 6.1.158-1 (2025-11-09)\n"))
		write(root, "sys/module/pktgen/initstate", []byte("live\n"))
		write(root, "sys/module/pktgen/srcversion", []byte("A1B2C3D4E5F60718293A4B5\n"))
		write(root, "sys/module/pktgen/notes/.note.gnu.build-id", reordered)
		write(root, "sys/module/tun/parameters/x", nil) // built in, with a /sys/module entry
		write(root, "lib/modules/"+rel+"/modules.builtin", []byte("kernel/drivers/net/tap.ko\n"))
	}
	var envs []results.Env
	for _, root := range []string{fromProc, fromBoot} {
		var e results.Env
		KernelIdentity{Root: root, Release: rel}.Fill(&e)
		envs = append(envs, e)
		if e.ConfigSHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: config sha256 %s from %s, want %x", root, e.ConfigSHA256, e.ConfigSource, sum)
		}
		want := map[string]results.ModuleID{
			"pktgen":    {State: "loaded", SrcVersion: "A1B2C3D4E5F60718293A4B5", BuildID: wantID},
			"tun":       {State: "built-in"},
			"tap":       {State: "built-in"},
			"vhost_net": {State: "not loaded"},
		}
		for m, w := range want {
			if e.Modules[m] != w {
				t.Errorf("%s: module %s = %+v, want %+v", root, m, e.Modules[m], w)
			}
		}
	}
	if envs[0].ConfigSource != "/proc/config.gz" || envs[1].ConfigSource != "/boot/config-"+rel {
		t.Errorf("config sources %q, %q", envs[0].ConfigSource, envs[1].ConfigSource)
	}
	if d := envs[0].IdentityDiff(&envs[1]); d != "" {
		t.Errorf("one kernel read two ways differs: %s", d)
	}
	other := envs[1]
	other.Modules = map[string]results.ModuleID{"pktgen": {State: "loaded", SrcVersion: "FFFF", BuildID: wantID}}
	if d := envs[0].IdentityDiff(&other); d != "pktgen srcversion A1B2C3D4E5F60718293A4B5 vs FFFF" {
		t.Errorf("IdentityDiff = %q", d)
	}
}
