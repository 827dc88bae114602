package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// The progress line's ETA: the estimate from the start, then the
// estimate of the samples left scaled by how the measured ones compared
// with theirs; skipped samples take no time.
func TestProgressETA(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 4, false)
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p.now = func() time.Time { return clock }
	p.est = &estimate.Estimate{PerSample: []time.Duration{0, 10 * time.Second, 10 * time.Second, 20 * time.Minute}}
	p.update(runner.Progress{Total: 4, Started: true})
	p.update(runner.Progress{Done: 1, Total: 4, Cell: "a", Kernel: "k", Skipped: true})
	clock = clock.Add(20 * time.Second) // twice its estimate
	p.update(runner.Progress{Done: 2, Total: 4, Cell: "b", Kernel: "k"})
	clock = clock.Add(10 * time.Second)
	p.update(runner.Progress{Done: 3, Total: 4, Cell: "c", Kernel: "k"})
	clock = clock.Add(time.Hour)
	p.update(runner.Progress{Done: 4, Total: 4, Cell: "d", Kernel: "k"})
	want := []string{
		"[0/4] started, eta 20 min (estimate)",
		"[1/4] a rep 1 (k): already in the run, skipped eta 20 min (estimate)",
		"[2/4] b rep 1 (k): done eta 40 min",
		"[3/4] c rep 1 (k): done eta 30 min",
		"[4/4] d rep 1 (k): done",
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got\n%s", b.String())
	}
	for i := range want {
		if strings.TrimSpace(lines[i]) != want[i] {
			t.Errorf("line %d: %q, want %q", i+1, lines[i], want[i])
		}
	}
}

// With --resume the estimate is of the cells left: notDone drops the
// cells whose sample the run directory holds, not failed ones.
func TestNotDone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	w, err := results.Create(dir, results.Env{Scenario: "x"})
	if err != nil {
		t.Fatal(err)
	}
	cells := []scenarios.Cell{{Name: "a", Rep: 0}, {Name: "a", Rep: 1}, {Name: "b", Rep: 0}, {Name: "b", Rep: 0, Kernel: scenarios.Kernel{Label: "patched"}}}
	for _, s := range []results.Sample{
		{Cell: "a", Kernel: "host", Rep: 0, Metrics: map[metric.Key]float64{"tx_pps": 1}},
		{Cell: "b", Kernel: "host", Rep: 0, Error: "traffic: iperf3 hung"},
		{Cell: "b", Kernel: "patched", Rep: 0, Metrics: map[metric.Key]float64{"tx_pps": 1}},
	} {
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	var got []string
	for _, c := range notDone(dir, cells) {
		got = append(got, fmt.Sprintf("%s/%d/%s", c.Name, c.Rep, c.Kernel.Label))
	}
	if want := []string{"a/1/", "b/0/"}; !slices.Equal(got, want) {
		t.Errorf("cells left: %v, want %v", got, want)
	}
	if n := len(notDone(filepath.Join(dir, "missing"), cells)); n != len(cells) {
		t.Errorf("an unreadable directory left %d cells, want all %d", n, len(cells))
	}
}

// The run inside a lab VM gets a built-in by name, a scenario file by its
// content (written into the run directory by lab.Run).
func TestLabScenario(t *testing.T) {
	s, err := scenarios.Resolve("lab-pktgen")
	if err != nil {
		t.Fatal(err)
	}
	if name, data, err := labScenario(s); err != nil || name != "lab-pktgen" || data != nil {
		t.Errorf("built-in: %q, %d bytes, %v; want lab-pktgen by name", name, len(data), err)
	}
	data, _ := scenarios.BuiltinData("lab-pktgen")
	file := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := scenarios.Resolve(file)
	if err != nil || fs.Builtin {
		t.Fatalf("file scenario: builtin %v, %v", fs != nil && fs.Builtin, err)
	}
	name, got, err := labScenario(fs)
	if err != nil || name != "" || !bytes.Equal(got, data) {
		t.Errorf("file: %q, %d bytes, %v; want the file's content", name, len(got), err)
	}
}

// A progress line prints a sample's metrics as the tables do: a lab's
// Lost of 76,950 pps read "lost_pps=7.695e+04".
func TestSampleSummarySI(t *testing.T) {
	s := &results.Sample{Metrics: map[metric.Key]float64{metric.TxPPS: 416.8, metric.LostPPS: 76950, metric.ThroughputBPS: 2.383e8}}
	if got, want := sampleSummary(s), "tx_pps=416.8 throughput_bps=238.3M lost_pps=76.95k"; got != want {
		t.Errorf("sampleSummary = %q, want %q", got, want)
	}
}

// The command env.json records is the run again: scenario, kernels (a
// lab run's columns), label, overrides and seed.
func TestSpecArgv(t *testing.T) {
	sp := Spec{Name: "lab-pktgen", Kernels: []scenarios.Kernel{{Label: "stock", Source: "debian:6.1"}},
		Sets: []scenarios.Set{{Key: "per_patch", Value: "true"}}}
	got := proc.Quote(sp.Argv(42))
	if want := "vnetbench run lab-pktgen --kernel stock=source=debian:6.1 --set per_patch=true --seed 42"; got != want {
		t.Errorf("Argv = %s, want %s", got, want)
	}
}

// The shorter forms plan suggests are the recorded command with the
// changed overrides: Command and Argv build one argv, so a kernel, a
// label or an override reads the same in env.json and in a suggestion.
func TestSpecCommandIsArgv(t *testing.T) {
	sp := Spec{Name: "lab-pktgen", Label: "a b",
		Kernels: []scenarios.Kernel{{Label: "stock", Source: "debian:6.1"}, {Label: "new", Source: "/tmp/bzImage"}},
		Sets:    []scenarios.Set{{Key: "repetitions", Value: "5"}, {Key: "per_patch", Value: "true"}}}
	if got, want := sp.Command(nil)+" --seed 7", proc.Quote(sp.Argv(7)); got != want {
		t.Errorf("Command(nil) + seed = %s\nArgv = %s", got, want)
	}
	got := sp.Command([]scenarios.Set{{Key: "repetitions", Value: "1"}})
	if want := "vnetbench run lab-pktgen --kernel stock=source=debian:6.1 --kernel new=source=/tmp/bzImage --label 'a b' --set per_patch=true --set repetitions=1"; got != want {
		t.Errorf("Command(repetitions=1) = %s, want %s", got, want)
	}
}

// Inside a lab VM without KVM the guests boot nested under TCG: the cells
// the running kernel runs (the ones runner.Run gets) carry the raised
// boot deadline, in run order, and the note says so once.
func TestInsideLabNestedBoot(t *testing.T) {
	var stderr bytes.Buffer
	o := Options{Scenario: Spec{Name: "quickstart", Kernels: []scenarios.Kernel{{Label: "stock", Source: "debian:6.1"}}},
		InsideLab: "stock", DryRun: true, Seed: 3, Dir: t.TempDir(), Stderr: &stderr,
		Host: func() lab.Host { return lab.Host{KVM: qemu.KVMStatus{Why: "no /dev/kvm (test)"}} }}
	o.setDefaults()
	r := &run{Options: o}
	if err := r.load(); err != nil {
		t.Fatal(err)
	}
	if err := r.order(); err != nil {
		t.Fatal(err)
	}
	if err := r.prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(r.labCells) != 0 || len(r.hostCells) != len(r.cells) || len(r.cells) == 0 {
		t.Fatalf("%d cells: %d on the running kernel, %d in lab VMs; want all on the running kernel", len(r.cells), len(r.hostCells), len(r.labCells))
	}
	for i, c := range r.hostCells {
		if c.Timeouts.Boot != lab.NestedTCGBoot || c.Name != r.cells[i].Name || c.Rep != r.cells[i].Rep {
			t.Errorf("host cell %d: %s rep %d boot %v; want %s rep %d boot %v", i, c.Name, c.Rep, c.Timeouts.Boot, r.cells[i].Name, r.cells[i].Rep, lab.NestedTCGBoot)
		}
	}
	if n := strings.Count(stderr.String(), "raised to 9m0s"); n != 1 {
		t.Errorf("%d notes of the raised deadline, want 1:\n%s", n, stderr.String())
	}
}

// A -o the run cannot use is refused before anything is printed: run
// -o FILE printed the scenario, the seed and the estimate, then the
// refusal.
func TestRunBadDirPrintsNothing(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, tc := range []struct {
		dir    string
		resume bool
	}{{file, false}, {filepath.Join(tmp, "none"), true}} {
		var stdout bytes.Buffer
		_, err := Run(t.Context(), Options{Scenario: Spec{Name: "quickstart"}, Dir: tc.dir, Resume: tc.resume, Stdout: &stdout,
			Host: func() lab.Host { t.Error("probed the host before refusing -o"); return lab.Host{} }})
		if !errors.Is(err, fault.ErrInput) {
			t.Errorf("-o %s (resume %v): %v, want bad input", tc.dir, tc.resume, err)
		}
		if stdout.Len() > 0 {
			t.Errorf("-o %s (resume %v): printed %q", tc.dir, tc.resume, stdout.String())
		}
	}
}

// A resumed run keeps the seed its env.json recorded: its remaining
// cells run in the order its first part was drawn from (a resume drew a
// new random seed and reshuffled them). A --seed that names another is
// overruled with a warning; a run directory without a seed leaves the
// choice to ResolveSeed.
func TestResumeKeepsSeed(t *testing.T) {
	made := t.TempDir()
	if err := results.WriteEnv(made, results.Env{Run: "r1", Scenario: "quickstart", Seed: 1234}); err != nil {
		t.Fatal(err)
	}
	bare := t.TempDir()
	if err := results.WriteEnv(bare, results.Env{Run: "r2", Scenario: "quickstart"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		dir      string
		seed     int64
		want     int64 // 0: any but 1234's order need not hold
		warnings int
	}{
		{"recorded", made, 0, 1234, 0},
		{"same --seed", made, 1234, 1234, 0},
		{"other --seed", made, 99, 1234, 1},
		{"none recorded, --seed", bare, 7, 7, 0},
	} {
		var stderr bytes.Buffer
		o := Options{Scenario: Spec{Name: "quickstart"}, Dir: tc.dir, Resume: true, Seed: tc.seed, Stderr: &stderr}
		o.setDefaults()
		r := &run{Options: o}
		if err := r.load(); err != nil {
			t.Fatal(err)
		}
		if err := r.order(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if r.seed != tc.want {
			t.Errorf("%s: seed %d, want %d", tc.name, r.seed, tc.want)
		}
		if !slices.EqualFunc(r.cells, scenarios.Order(r.distinct, tc.want), func(a, b scenarios.Cell) bool { return a.Name == b.Name && a.Rep == b.Rep }) {
			t.Errorf("%s: cells not in seed %d's order", tc.name, tc.want)
		}
		if n := strings.Count(stderr.String(), "was made with seed 1234"); n != tc.warnings {
			t.Errorf("%s: %d warnings of the recorded seed, want %d:\n%s", tc.name, n, tc.warnings, stderr.String())
		}
	}
}

// The dry run refuses a -o run refuses, after printing what it would
// run: it printed the commands and exited 0, and the run then refused
// -o at once.
func TestDryRunBadDir(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, tc := range []struct {
		dir    string
		resume bool
	}{{file, false}, {filepath.Join(tmp, "none"), true}, {tmp, false}} {
		var stdout bytes.Buffer
		_, err := Run(t.Context(), Options{Scenario: Spec{Name: "quickstart"}, Dir: tc.dir, Resume: tc.resume, DryRun: true, Seed: 1, Stdout: &stdout,
			Host: func() lab.Host { return lab.Host{KVM: qemu.KVMStatus{Why: "no /dev/kvm (test)"}} }})
		if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "run directory") {
			t.Errorf("--dry-run -o %s (resume %v): %v, want bad input naming the run directory", tc.dir, tc.resume, err)
		}
		if !strings.Contains(stdout.String(), "samples in this order") {
			t.Errorf("--dry-run -o %s (resume %v): printed no dry run:\n%s", tc.dir, tc.resume, stdout.String())
		}
	}
}

// A run without -o picks runs/NAME-TIMESTAMP: a link planted at runs
// (vnetbench's choice, not the user's) is refused, one line, before the
// host is probed or anything written; the dry run says so last.
func TestDefaultDirLink(t *testing.T) {
	wd, other := t.TempDir(), t.TempDir()
	t.Chdir(wd)
	if err := os.Symlink(other, "runs"); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		t.Run(fmt.Sprint("dry=", dry), func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var stdout bytes.Buffer
			_, err := Run(ctx, Options{Scenario: Spec{Name: "quickstart"}, DryRun: dry, Seed: 1, Stdout: &stdout, Stderr: io.Discard,
				Host: func() lab.Host {
					if !dry {
						t.Error("probed the host before refusing the link")
						cancel() // go no further, not as root
					}
					return lab.Host{KVM: qemu.KVMStatus{Why: "no /dev/kvm (test)"}}
				}})
			want := filepath.Join(wd, "runs") + " is a symbolic link (to " + other + "), on the way to "
			if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "give -o DIR, or remove the link") {
				t.Errorf("%v, want bad input starting %q", err, want)
			}
			if !dry && stdout.Len() > 0 {
				t.Errorf("printed %q", stdout.String())
			}
			if ents, _ := os.ReadDir(other); len(ents) > 0 {
				t.Errorf("wrote %s through the link", ents[0].Name())
			}
		})
	}
}
