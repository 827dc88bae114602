package session

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// fullDisk makes every file system report free bytes free, one file
// system for every path.
func fullDisk(t *testing.T, free int64) {
	t.Helper()
	old := statfsFunc
	t.Cleanup(func() { statfsFunc = old })
	statfsFunc = func(_ string, st *syscall.Statfs_t) error {
		st.Bsize, st.Bavail = 4096, uint64(free/4096)
		return nil
	}
}

// What a run writes: a fetch and a tree's first whole kernel in the
// cache, not what the cache holds or an incremental build; perf record
// by its window under the run directory, not a count-bound window.
func TestNeedOf(t *testing.T) {
	modes := []lab.BuildMode{{Items: []estimate.BuildItem{
		{Kind: estimate.StepFetchSource, N: 1, What: "fetch linux-source-6.1"},
		{Kind: estimate.StepFetchDebian, Cached: "in the cache", What: "fetch Debian's kernel and headers"},
		{Kind: estimate.StepFullBuild, N: 1, What: "whole kernel stock"},
		{Kind: estimate.StepIncremental, N: 1, What: "whole kernel patched"},
		{Kind: estimate.StepModule, N: 2, What: "modules tun, 2 kernels"},
	}}}
	s, err := Spec{Name: "quickstart", Sets: []scenarios.Set{{Key: "perf", Value: "{record: {call_graph: true}}"}}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	cells := SamplesOf(s, 1)
	n := needOf(modes, cells)
	if n.cache != needFetchSource+needFullBuild || strings.Join(n.cacheFor, ", ") != "fetch linux-source-6.1, whole kernel stock" {
		t.Errorf("cache: %d bytes for %q", n.cache, n.cacheFor)
	}
	var want int64
	for _, c := range cells {
		if d, known := c.Generator.Config.Length(); known {
			want += int64(d.Seconds() * perfGraphBytesPerSec)
		}
	}
	if want == 0 || n.dir != want {
		t.Errorf("run directory: %d bytes for %q, want %d", n.dir, n.dirFor, want)
	}
}

// A run that fetches and builds more than the disk holds is refused
// before anything starts (exit 2, the disk, the free space, the need and
// what for), its dry run says so last, and plan warns. It ran, and
// failed with ENOSPC minutes into the fetch. (The run has a --max-time
// no estimate fits: without the check it stops there, booting nothing.)
func TestRunRefusesFullDisk(t *testing.T) {
	fullDisk(t, 1<<30)
	cache := t.TempDir() // empty: the source and Debian's kernel are fetched
	host := func() lab.Host { return lab.Host{KVM: qemu.KVMStatus{Why: "no /dev/kvm (test)"}, CPUs: []int{0, 1}} }
	dir := filepath.Join(t.TempDir(), "run")
	const want = "run: not enough disk space: the cache ("
	_, err := Run(t.Context(), Options{Scenario: Spec{Name: "lab-pktgen"}, Dir: dir, EstimateDir: cache, Host: host, MaxTime: time.Millisecond})
	if !errors.Is(err, fault.ErrCapability) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "has 1.0 GiB free, and this run needs at least 2.0 GiB there (fetch linux-source-6.1, fetch Debian's kernel and headers") {
		t.Errorf("run: %v, want a refusal %q...", err, want)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("the refused run made its run directory")
	}
	var stdout bytes.Buffer
	_, err = Run(t.Context(), Options{Scenario: Spec{Name: "lab-pktgen"}, Dir: dir, EstimateDir: cache, Host: host, DryRun: true, Seed: 1, Stdout: &stdout})
	if !errors.Is(err, fault.ErrCapability) || !strings.Contains(err.Error(), want) || !strings.Contains(stdout.String(), "samples in this order") {
		t.Errorf("dry run: %v, want the dry run and then the refusal", err)
	}
	s, err := Spec{Name: "lab-pktgen"}.Load()
	if err != nil {
		t.Fatal(err)
	}
	p := BuildPlan(s, 1, host())
	tab, _ := estimate.Load(cache)
	p.AddEstimate(t.Context(), Spec{Name: "lab-pktgen"}, s, host(), tab, cache, 0)
	if !strings.Contains(strings.Join(p.Warnings, "\n"), "not enough disk space: the cache (") {
		t.Errorf("plan warns only:\n%s", strings.Join(p.Warnings, "\n"))
	}
}
