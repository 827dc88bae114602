package kbuild

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/vmimages"
)

// tunPatchFile is the shipped example series' patch
// (scenarios/series/tun-backpressure/README.md), which the built-in
// lab-pktgen names as series:tun-backpressure.
const tunPatchFile = "../../scenarios/series/tun-backpressure/0001-tun-stop-the-tx-queue-on-a-full-ring-instead-of-dropping.patch"

// debianSource returns Debian's linux-source-6.1 unpacked in the harness
// cache (CACHE/src/linux-source-6.1), fetching it the first time, as a
// run of a kernel with source: debian:6.1 does. It skips (fails under CI)
// when the host cannot fetch it.
func debianSource(t *testing.T) string {
	t.Helper()
	dir, err := DebianSource(t.Context(), filepath.Join(vmimages.CacheDir(), "src"), "6.1", testWriter{t})
	if errors.Is(err, fault.ErrCapability) {
		testenv.Skipf(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestBuildLinuxSource builds Debian's linux-source-6.1 twice with the
// harness's config: stock, then with the tun backpressure series, into
// the harness's build cache, where the full-build lab e2e
// (TestLabPktgenFullBuildE2E) and lab-pktgen with build: full (the same
// tree, patch and config: the same cache keys) find them. On a cold cache
// this is the first build plus the incremental patched build: 16 min 48 s
// on the 2-core CI machine (663 CPU-seconds; 960 s in a whole CI run), so
// it is opt-in; CI builds modules instead (TestModuleBuildLinuxSource).
func TestBuildLinuxSource(t *testing.T) {
	testenv.OptIn(t, "VNETBENCH_E2E_FULLBUILD", "two whole kernels from linux-source-6.1, about 17 min cold on 2 cores: VNETBENCH_E2E_FULLBUILD=1 go test -run TestBuildLinuxSource -timeout 60m ./runner/kbuild")
	if err := CheckDeps(); err != nil {
		testenv.Skipf(t, "%v", err)
	}
	tree := debianSource(t)
	patch, _ := filepath.Abs(tunPatchFile)
	b := &Builder{Dir: filepath.Join(vmimages.CacheDir(), "kbuild"), Log: testWriter{t}, Every: time.Minute}
	start := time.Now()
	ks, err := b.BuildAll(t.Context(), []Spec{
		{Label: "stock", Tree: tree},
		{Label: "patched", Tree: tree, Patches: []string{patch}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stock: cached %v, %d files compiled, %.0fs; patched: cached %v, %d files compiled, %.0fs; wall %s",
		ks[0].Cached, ks[0].Compiled, ks[0].Identity.Seconds, ks[1].Cached, ks[1].Compiled, ks[1].Identity.Seconds, time.Since(start).Round(time.Second))
	stock, patched := ks[0], ks[1]
	if !patched.Cached && !stock.Cached && patched.Compiled > 5 {
		t.Errorf("the patched build recompiled %d files; the patch touches one", patched.Compiled)
	}
	if stock.Identity.ConfigSHA256 != patched.Identity.ConfigSHA256 {
		t.Errorf("stock and patched have different configs")
	}
	if len(patched.Identity.Patches) != 1 || patched.Identity.Patches[0].Subject != "tun: stop the tx queue on a full ring instead of dropping" {
		t.Errorf("patched identity: %+v", patched.Identity.Patches)
	}
	for _, k := range ks {
		if !strings.HasPrefix(k.Identity.Release, "6.1.") || !strings.HasPrefix(k.Identity.ProcVersion, "Linux version "+k.Identity.Release+" (vnetbench@vnetbench)") {
			t.Errorf("identity %+v", k.Identity)
		}
		img, err := os.ReadFile(k.Image)
		if err != nil || len(img) < 0x210 || string(img[0x202:0x206]) != "HdrS" {
			t.Errorf("%s is not a bzImage", k.Image)
		}
		builtin, err := os.ReadFile(filepath.Join(k.Modules, "modules.builtin"))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"drivers/net/tun.ko", "drivers/vhost/vhost_net.ko", "net/core/pktgen.ko", "fs/9p/9p.ko", "net/9p/9pnet_virtio.ko", "net/sched/sch_fq_codel.ko"} {
			if !bytes.Contains(builtin, []byte("kernel/"+m+"\n")) {
				t.Errorf("%s: %s is not built in", k.Identity.Release, m)
			}
		}
	}
}
