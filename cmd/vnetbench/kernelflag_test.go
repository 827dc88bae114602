package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/scenarios"
)

// --kernel replaces the scenario's kernels; bad specs and kernels from
// source that cannot be built are one line and exit 2, before anything is
// created.
func TestRunKernelFlagBadInput(t *testing.T) {
	tmp := t.TempDir()
	data, _ := scenarios.BuiltinData("quickstart")
	file := filepath.Join(tmp, "mine.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	notTree := filepath.Join(tmp, "not-a-tree")
	if err := os.MkdirAll(notTree, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kernel", "stock"}, "want LABEL=SPEC"},
		{[]string{"--kernel", "stock=tree=/x,colour=blue"}, `unknown key "colour"`},
		{[]string{"--kernel", "a=debian:6.1", "--kernel", "a=debian:6.1"}, "given twice"},
		{[]string{"--kernel", "patched=tree=" + notTree}, "is not a Linux kernel tree"},
		{[]string{"--kernel", "patched=tree=" + filepath.Join(tmp, "nope")}, "is not a directory"},
		{[]string{"--kernel", "patched=source=debian:6.1,patches=series:nope"}, `no shipped series "nope"`},
		{[]string{"--kernel", "patched=source=6.1"}, "use debian:MAJOR.MINOR"},
	} {
		// A built-in, and a scenario file (whose copy for the lab VMs goes
		// into the run directory only once the run has started).
		for _, scen := range []string{"quickstart", file} {
			dir := filepath.Join(tmp, "run")
			var out, errb bytes.Buffer
			args := append([]string{"run", scen, "-o", dir}, tc.args...)
			err := run(t.Context(), args, &out, &errb)
			if code := exitCode(err); code != exitBadInput || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s %v: exit %d, err %v; want exit 2 with %q", scen, tc.args, code, err, tc.want)
				continue
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("%s %v: more than one line: %q", scen, tc.args, err)
			}
			if _, serr := os.Stat(dir); serr == nil {
				t.Errorf("%s %v: a run directory was created", scen, tc.args)
			}
		}
	}
}

// The flag makes every cell a lab cell of the given kernels, in plan too.
func TestPlanKernelFlag(t *testing.T) {
	cachedLabKernels(t)
	tmp := t.TempDir() // the tree and patches dry-run checks are there
	os.Mkdir(filepath.Join(tmp, "linux"), 0o755)
	writeTestPatch(t, filepath.Join(tmp, "p", "0001-tun-a-change.patch"))
	var out, errb bytes.Buffer
	if err := run(t.Context(), []string{"run", "quickstart", "--dry-run", "--seed", "1", "--kernel", "stock=debian:6.1", "--kernel", "patched=tree=" + filepath.Join(tmp, "linux") + ",patches=" + filepath.Join(tmp, "p", "*.patch")}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "(kernel stock, tcg)") || !strings.Contains(s, "(kernel patched, tcg)") || strings.Contains(s, "(kernel running") {
		t.Errorf("dry run does not run on the flag's kernels:\n%s", s)
	}
}

// --kernel's paths become absolute where the flag is parsed; source: and
// series:NAME are no paths and stay as written.
func TestKernelFlagSourceAndSeries(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, _ := os.Getwd()
	ks, err := (kernelFlags{"patched=source=debian:6.1,patches=series:tun-backpressure,patches=mine.patch"}).parse()
	if err != nil {
		t.Fatal(err)
	}
	k := ks[0]
	if k.Source != "debian:6.1" || len(k.Patches) != 2 || k.Patches[0] != "series:tun-backpressure" || k.Patches[1] != filepath.Join(wd, "mine.patch") {
		t.Errorf("kernel %+v", k)
	}
}

// run/plan --label names the running kernel: its column; a bad label or a
// scenario without a running kernel is one line and exit 2.
func TestLabelFlag(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(t.Context(), []string{"plan", "quickstart", "--label", "boot-b"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "kernels: boot-b (the running kernel)") || !strings.Contains(out.String(), "[kernel boot-b]") {
		t.Errorf("plan --label boot-b:\n%s", out.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "quickstart", "--label", "a b"}, `--label: kernel label "a b"`},
		{[]string{"plan", "lab-pktgen", "--label", "boot-b"}, "every kernel of lab-pktgen boots in a lab VM"},
		{[]string{"run", "quickstart", "--label", "a/b", "-o", filepath.Join(t.TempDir(), "run")}, `--label: kernel label "a/b"`},
	} {
		err := run(t.Context(), tc.args, &out, &errb)
		if code := exitCode(err); code != exitBadInput || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: exit %d, err %v; want exit 2 with %q on one line", tc.args, code, err, tc.want)
		}
	}
}

// report refuses to pool two runs that label different kernels alike (a
// bare-metal A/B across a reboot without --label), exit 2 with the hint.
func TestReportRefusesOneLabelForTwoKernels(t *testing.T) {
	tmp := t.TempDir()
	var dirs []string
	for i, banner := range []string{"Linux version 6.1.0-41-amd64 #1 SMP Debian 6.1.158-1", "Linux version 6.1.0-41-amd64 #2 SMP built here"} {
		dir := filepath.Join(tmp, []string{"before", "after"}[i])
		w, err := results.Create(dir, results.Env{KernelRelease: "6.1.0-41-amd64", ProcVersion: banner})
		if err != nil {
			t.Fatal(err)
		}
		for rep := range 2 {
			if err := w.Append(results.Sample{Cell: "tap/pktgen-t1", Kernel: "running", Rep: i*2 + rep,
				Axes: map[string]string{"backend": "tap", "generator": "pktgen-t1"}, Metrics: map[metric.Key]float64{"tx_pps": 1000}}); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		dirs = append(dirs, dir)
	}
	var out, errb bytes.Buffer
	err := run(t.Context(), append([]string{"report"}, dirs...), &out, &errb)
	if code := exitCode(err); code != exitBadInput || !strings.Contains(err.Error(), "/proc/version") ||
		!strings.Contains(err.Error(), "vnetbench run --label NAME") || strings.Contains(err.Error(), "\n") {
		t.Errorf("report of two kernels under one label: exit %d, err %v", code, err)
	}
	if out.Len() != 0 {
		t.Errorf("report printed a table anyway:\n%s", out.String())
	}
}

// cachedLabKernels gives the test a harness cache holding the Debian
// kernels the built-ins' lab kernels name (6.1, 6.12): plan and run check
// a Debian series against the cache, else apt's lists, which this
// machine's may lack (testenv.CachedDebianKernels). It returns the cache.
func cachedLabKernels(t *testing.T) string {
	return testenv.CachedDebianKernels(t, "6.1.0-47-amd64", "6.12.117+deb12-amd64")
}

// A Debian series neither cached nor known to apt: plan warns with the
// line run refuses it with (before it makes anything: runner/lab's
// TestKernelsRefusedFirst), run --dry-run refuses it with that line, exit 2.
func TestPlanDryRunUnknownDebianSeries(t *testing.T) {
	cachedLabKernels(t)
	testenv.NoAPTPackages(t)
	const refusal = "kernel stock: lab: no Debian 9.9 kernel (linux-image-9.9*-amd64-unsigned) cached or known to apt; run apt-get update (6.12 comes from bookworm-security) or give image:/modules:"
	var out, errb bytes.Buffer
	if err := run(t.Context(), []string{"plan", "quickstart", "--kernel", "stock=debian:9.9"}, &out, &errb); err != nil {
		t.Fatalf("plan: %v", err)
	}
	if want := "warning: " + refusal + " (vnetbench run refuses this on this machine)\n"; strings.Count(errb.String(), want) != 1 {
		t.Errorf("plan's stderr lacks %q once:\n%s", want, errb.String())
	}
	err := run(t.Context(), []string{"run", "quickstart", "--kernel", "stock=debian:9.9", "--dry-run"}, io.Discard, io.Discard)
	if exitCode(err) != exitBadInput || fmt.Sprint(err) != refusal {
		t.Errorf("run --dry-run: %v (exit %d), want exit 2: %s", err, exitCode(err), refusal)
	}
}
