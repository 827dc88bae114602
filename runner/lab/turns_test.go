package lab

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/internal/fakeqemu"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// turnLabs plays the lab VMs of a run side by side with a fake Boot
// that follows the turn protocol as labvm.Run does: the lab works
// (boots), announces it is ready and is paused (Turns.Ready), measures
// on its turn (its inner run writes its samples), powers off. It fails
// every lab that works or measures beside a measuring lab.
type turnLabs struct {
	t     *testing.T
	cells []scenarios.Cell
	mu    sync.Mutex
	live  map[string]string // label -> "working", "paused", "measuring"
	log   []string
	boots map[string]int
	turns []bool // per boot: Config.Turns was set
	// before holds a lab back before it announces ready until the lab
	// named is paused (to make it ready second).
	before map[string]string
	// fail: label -> "before ready" | "measuring" | "measuring, stopped" |
	// "interrupt" (on its turn, the run is interrupted: cancel).
	fail   map[string]string
	cancel context.CancelFunc
}

func newTurnLabs(t *testing.T, cells []scenarios.Cell) *turnLabs {
	cachedDebian61(t)
	return &turnLabs{t: t, cells: cells, live: map[string]string{}, boots: map[string]int{}, before: map[string]string{}, fail: map[string]string{}}
}

// set moves label to state ("" = ended) and checks that no lab works or
// measures beside a measuring one.
func (l *turnLabs) set(label, state, event string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if state == "" {
		delete(l.live, label)
	} else {
		l.live[label] = state
	}
	if event != "" {
		l.log = append(l.log, label+" "+event)
	}
	var measuring, unpaused []string
	for k, s := range l.live {
		if s == "measuring" {
			measuring = append(measuring, k)
		}
		if s != "paused" {
			unpaused = append(unpaused, k)
		}
	}
	if len(measuring) > 0 && len(unpaused) > 1 {
		l.t.Errorf("%s %s: labs %v run beside measuring %v", label, event, unpaused, measuring)
	}
}

func (l *turnLabs) state(label string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.live[label]
}

func (l *turnLabs) boot(ctx context.Context, c labvm.Config) (*labvm.Result, error) {
	l.mu.Lock()
	l.boots[c.Label]++
	boot := l.boots[c.Label]
	l.turns = append(l.turns, c.Turns != nil)
	l.mu.Unlock()
	l.set(c.Label, "working", "boots")
	defer l.set(c.Label, "", "")
	labErr := func(err error) error { return &labvm.Error{Label: c.Label, Phase: "run", Err: err} }
	fail := l.fail[c.Label]
	if fail == "before ready" {
		return &labvm.Result{}, labErr(errors.New("the run inside failed before measuring"))
	}
	if other := l.before[c.Label]; other != "" && boot == 1 {
		for l.state(other) != "paused" {
			time.Sleep(time.Millisecond)
		}
	}
	if c.Turns != nil {
		l.set(c.Label, "paused", "ready")
		select {
		case <-c.Turns.Ready(c.Label):
		case <-ctx.Done():
			return &labvm.Result{}, labErr(ctx.Err())
		}
	}
	l.set(c.Label, "measuring", "measures")
	switch {
	case fail == "interrupt":
		l.cancel()
		<-ctx.Done()
		return &labvm.Result{}, labErr(ctx.Err())
	case fail == "measuring":
		return &labvm.Result{}, labErr(errors.New("the run inside failed"))
	case fail == "measuring, stopped" && boot == 1:
		return &labvm.Result{Accel: qemu.TCG}, labErr(fmt.Errorf("the lab has been silent: %w", labvm.ErrStopped))
	}
	return &labvm.Result{}, l.innerRun(c)
}

// innerRun writes the samples of c's label that its run directory does
// not hold yet, as the run inside does.
func (l *turnLabs) innerRun(c labvm.Config) error {
	o := c.Args[slices.Index(c.Args, "-o")+1]
	var w *results.Writer
	var err error
	if slices.Contains(c.Args, "--resume") {
		w, err = results.Open(o)
	} else {
		w, err = results.Create(o, results.Env{Run: "inner-" + c.Label, KernelRelease: "6.1.0-47-amd64"})
	}
	if err != nil {
		return err
	}
	defer w.Close()
	for _, cell := range Inside(l.cells, c.Label) {
		if !w.Done(cell.Name, c.Label, cell.Rep) {
			w.Append(results.Sample{Cell: cell.Name, Rep: cell.Rep, Kernel: c.Label, Start: time.Unix(0, 0), WindowS: 1,
				Metrics: map[metric.Key]float64{"tx_pps": 1000}})
		}
	}
	return nil
}

func (l *turnLabs) run(ctx context.Context, dir string, resume bool, accel qemu.Accel) (*runner.Summary, error) {
	o := runner.Options{Dir: filepath.Join(dir, "run"), Seed: 1, Exec: &proc.Fake{}, LockPath: filepath.Join(dir, "lock"), Resume: resume, Accel: accel}
	return Run(ctx, l.cells, o, Inner{Scenario: "lab-pktgen", Labels: []string{"stock", "patched"}, SideBySide: 2, Boot: l.boot})
}

// Two labs boot side by side and measure in turn, in the scenario's
// label order even when the second is ready first, never beside another
// lab's work; every sample comes back.
func TestLabsSideBySideMeasureInTurn(t *testing.T) {
	l := newTurnLabs(t, twoKernelCells(t))
	l.before["stock"] = "patched" // patched is ready first
	dir := t.TempDir()
	sum, err := l.run(t.Context(), dir, false, "")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Samples != 8 {
		t.Errorf("%d samples, want 8", sum.Samples)
	}
	want := []string{"patched ready", "stock ready", "stock measures", "patched measures"}
	if got := slices.DeleteFunc(slices.Clone(l.log), func(s string) bool { return strings.HasSuffix(s, "boots") }); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if !slices.Equal(l.turns, []bool{true, true}) {
		t.Errorf("labs with Turns %v, want both", l.turns)
	}
}

// A lab that fails before it is ready leaves the set: the other measures
// and the run ends with that kernel failed. --resume then runs the failed
// kernel alone: one lab, no turns.
func TestLabsSideBySideFailBeforeReady(t *testing.T) {
	l := newTurnLabs(t, twoKernelCells(t))
	l.fail["stock"] = "before ready"
	dir := t.TempDir()
	sum, err := l.run(t.Context(), dir, false, "")
	var le *Error
	if !errors.As(err, &le) || len(le.Failed) != 1 || !strings.Contains(le.Failed[0].Error(), "lab stock") {
		t.Fatalf("err = %v, want stock's lab failed", err)
	}
	if sum.Samples != 4 || !slices.Contains(l.log, "patched measures") {
		t.Errorf("%d samples, events %v; want patched's 4 measured", sum.Samples, l.log)
	}
	l.fail, l.log, l.turns = map[string]string{}, nil, nil
	sum, err = l.run(t.Context(), dir, true, "")
	if err != nil || sum.Samples != 4 || sum.Skipped != 4 {
		t.Fatalf("resume: %+v, %v; want stock's 4 measured, patched's 4 skipped", sum, err)
	}
	if !slices.Equal(l.turns, []bool{false}) || !slices.Equal(l.log, []string{"stock boots", "stock measures"}) {
		t.Errorf("resume: turns %v, events %v; want stock alone, without turns", l.turns, l.log)
	}
}

// A lab that fails while it holds the turn gives it up: the next lab
// measures. Under TCG a lab that stopped is booted again first, and the
// other lab stays paused while it boots.
func TestLabsSideBySideFailWhileMeasuring(t *testing.T) {
	for _, tc := range []struct {
		fail   string
		accel  qemu.Accel
		want   []string
		failed bool
	}{
		{"measuring", "", []string{"stock measures", "patched measures"}, true},
		{"measuring, stopped", qemu.TCG, []string{"stock measures", "stock boots", "stock ready", "stock measures", "patched measures"}, false},
	} {
		t.Run(tc.fail, func(t *testing.T) {
			l := newTurnLabs(t, twoKernelCells(t))
			l.fail["stock"] = tc.fail
			sum, err := l.run(t.Context(), t.TempDir(), false, tc.accel)
			var le *Error
			if errors.As(err, &le) != tc.failed || (!tc.failed && err != nil) {
				t.Fatalf("err = %v, want failed %v", err, tc.failed)
			}
			if want := 8 - map[bool]int{true: 4}[tc.failed]; sum.Samples != want {
				t.Errorf("%d samples, want %d", sum.Samples, want)
			}
			i := slices.Index(l.log, "stock measures")
			if got := l.log[i:]; !slices.Equal(got, tc.want) {
				t.Errorf("events from stock's turn %v, want %v", got, tc.want)
			}
		})
	}
}

// An interrupt while a lab measures ends both labs, the paused one too,
// and the run says it was interrupted.
func TestLabsSideBySideInterrupt(t *testing.T) {
	l := newTurnLabs(t, twoKernelCells(t))
	l.fail["stock"] = "interrupt"
	ctx, cancel := context.WithCancel(t.Context())
	l.cancel = cancel
	_, err := l.run(ctx, t.TempDir(), false, "")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want interrupted", err)
	}
	if slices.Contains(l.log, "patched measures") || len(l.live) != 0 {
		t.Errorf("events %v, live %v: want patched never measured, no lab left", l.log, l.live)
	}
}

// A run with one kernel boots its lab as before: no turns.
func TestLabAloneNoTurns(t *testing.T) {
	l := newTurnLabs(t, loadCells(t, `
kernels: [{label: stock, debian: "6.1"}]
backend: tap
generator: {trafgen: {duration: 1s}}
`))
	dir := t.TempDir()
	o := runner.Options{Dir: filepath.Join(dir, "run"), Seed: 1, Exec: &proc.Fake{}, LockPath: filepath.Join(dir, "lock")}
	if _, err := Run(t.Context(), l.cells, o, Inner{Scenario: "x", Labels: []string{"stock"}, Boot: l.boot}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.turns, []bool{false}) {
		t.Errorf("labs with Turns %v, want one without", l.turns)
	}
}

// Real lab VMs (fake QEMUs) paused for their turn are killed by an
// interrupt like running ones: none is left.
func TestLabsSideBySidePausedKilled(t *testing.T) {
	dir := t.TempDir()
	img, mods, bin := fakeqemu.Lab(t, dir, "6.1.0-99-fake")
	cells := loadCells(t, fmt.Sprintf(`
name: turns
kernels:
  - {label: a, image: %[1]s, modules: %[2]s}
  - {label: b, image: %[1]s, modules: %[2]s}
backend: tap
guest: {kernel: {image: %[1]s}}
generator: {trafgen: {duration: 1s}}
`, img, mods))
	ex := &fakeqemu.Exec{Script: func(string) []fakeqemu.Step {
		return []fakeqemu.Step{
			{Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvInit, Kernel: "6.1.0-99-fake"})},
			{After: 20 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvModules})},
			{After: 20 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvStart})},
			{After: 20 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvTurn})},
			{After: time.Hour, Line: "never"},
		}
	}}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for {
			ps := ex.Procs()
			if len(ps) == 2 && !slices.ContainsFunc(ps, func(p *fakeqemu.Proc) bool { return !slices.Contains(p.QMP(), "stop") }) {
				cancel() // both paused once: a is measuring, b waits
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	o := runner.Options{Dir: filepath.Join(dir, "run"), Seed: 1, LockPath: filepath.Join(dir, "lock"), Exec: ex, Accel: qemu.TCG}
	_, err := Run(ctx, cells, o, Inner{Scenario: "turns.yaml", Binary: bin, Labels: []string{"a", "b"}, SideBySide: 2})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want interrupted", err)
	}
	for _, p := range ex.Procs() {
		select {
		case <-p.Done():
		default:
			t.Errorf("fake QEMU %s still running", p.Name)
		}
	}
}

// How many labs run side by side: as many as fit in 3/4 of the memory
// and, vCPU for vCPU, in the host's CPUs (the largest together), capped.
func TestSideBySide(t *testing.T) {
	labs := func(vcpus int, mem ...int) []Size {
		out := make([]Size, len(mem))
		for i, m := range mem {
			out[i] = Size{CPUs: vcpus, MemoryMiB: m}
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		labs       []Size
		host, cpus int
		want       int
	}{
		{"4 vCPUs on 4 CPUs", labs(2, 2048, 2048), 24000, 4, 2},
		{"4 vCPUs on 2 CPUs: one after the other", labs(2, 2048, 2048), 24000, 2, 1},
		{"lab-pktgen here: 4+4 vCPUs on 2 CPUs", labs(4, 2048, 2048), 24000, 2, 1},
		{"8 vCPUs on 7 CPUs", labs(4, 2048, 2048), 24000, 7, 1},
		{"1-vCPU labs on 2 CPUs", labs(1, 2048, 2048), 24000, 2, 2},
		{"three 1-vCPU labs on 2 CPUs", labs(1, 2048, 2048, 2048), 24000, 2, 2},
		{"three 2-vCPU labs on 6 CPUs", labs(2, 2048, 2048, 2048), 24000, 6, 3},
		{"the largest vCPUs together: 4+2 on 5 CPUs", []Size{{CPUs: 2, MemoryMiB: 2048}, {CPUs: 4, MemoryMiB: 2048}, {CPUs: 2, MemoryMiB: 2048}}, 24000, 5, 1},
		{"the largest vCPUs together: 4+2 on 6 CPUs", []Size{{CPUs: 2, MemoryMiB: 2048}, {CPUs: 4, MemoryMiB: 2048}, {CPUs: 2, MemoryMiB: 2048}}, 24000, 6, 2},
		{"one lab", labs(2, 2048), 24000, 8, 1},
		{"no lab", nil, 24000, 8, 0},
		{"memory unknown", labs(1, 2048, 2048), 0, 8, 1},
		{"one CPU", labs(1, 2048, 2048), 24000, 1, 1},
		{"vCPUs fit, the two largest memories do not fit in 12000", labs(1, 9000, 9000, 2048), 16000, 8, 1},
		{"vCPUs fit, two memories fit in 9000, three do not", labs(1, 4096, 4096, 4096), 12000, 8, 2},
		{"capped", labs(1, slices.Repeat([]int{1024}, 8)...), 64000, 16, MaxSideBySide},
	} {
		if got := SideBySide(tc.labs, tc.host, tc.cpus); got != tc.want {
			t.Errorf("%s: SideBySide(%+v, %d MiB, %d CPUs) = %d, want %d", tc.name, tc.labs, tc.host, tc.cpus, got, tc.want)
		}
	}
}

// lab-pktgen's labs have 4 vCPUs each on the 2-core CI machine (its
// 4-thread cells name CPU 3), 5 where the host has 5 CPUs or more: one
// after the other there and on 9 CPUs, side by side on 10.
func TestPlanSideBySideLabPktgen(t *testing.T) {
	cells := builtinCellsOf(t, "lab-pktgen")
	for _, tc := range []struct{ cpus, want int }{{2, 1}, {9, 1}, {10, 2}} {
		h := Host{MemMiB: 24 << 10}
		for i := range tc.cpus {
			h.CPUs = append(h.CPUs, i)
		}
		if got := PlanSideBySide(cells, h); got != tc.want {
			t.Errorf("%d CPUs: %d labs side by side, want %d", tc.cpus, got, tc.want)
		}
	}
}

// How many labs of a run run at once: Inner.SideBySide when set, else as
// the host holds the labels with samples to run (PlanSideBySide), and
// the log says when two or more run one after the other.
func TestRunSideBySideOfHost(t *testing.T) {
	cells := twoKernelCells(t) // 2-vCPU labs on hosts of 2 CPUs or more
	w, err := results.Create(t.TempDir(), results.Env{Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	labels, byLabel := scenarios.ByKernel(cells, []string{"stock", "patched"})
	var log strings.Builder
	lr := &labRun{o: runner.Options{Log: &log}, w: w}
	for _, tc := range []struct {
		cpus, force, want int
		log               string
	}{
		{2, 0, 1, "2 lab VMs run one after the other (kernels stock, patched): side by side, their vCPUs must fit in this host's 2 CPUs and their memory in 3/4 of its 24576 MiB\n"},
		{4, 0, 2, ""},
		{2, 2, 2, ""}, // forced, as the tests with fake labs do
	} {
		log.Reset()
		lr.host, lr.in.SideBySide = Host{CPUs: []int{0, 1, 2, 3}[:tc.cpus], MemMiB: 24 << 10}, tc.force
		if got := lr.sideBySide(labels, byLabel); got != tc.want || log.String() != tc.log {
			t.Errorf("%d CPUs, forced %d: %d side by side, log %q; want %d, %q", tc.cpus, tc.force, got, log.String(), tc.want, tc.log)
		}
	}
	// stock's samples are in the run: patched alone is left, nothing said.
	for _, c := range byLabel["stock"] {
		if err := w.Append(results.Sample{Cell: c.Name, Rep: c.Rep, Kernel: "stock", Start: time.Unix(0, 0), WindowS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	log.Reset()
	lr.host, lr.in.SideBySide = Host{CPUs: []int{0, 1}, MemMiB: 24 << 10}, 0
	if got := lr.sideBySide(labels, byLabel); got != 1 || log.Len() != 0 {
		t.Errorf("patched left: %d side by side, log %q; want 1, nothing", got, log.String())
	}
}

// Once the run ends no paused lab is granted the turn, even when the lab
// that measured gives it up before the paused one sees the end (the
// interrupt raced the grant and the paused lab measured in a CI run).
func TestTurnsNoGrantAfterRunEnds(t *testing.T) {
	ended := make(chan struct{})
	tr := newTurns(ended, []string{"stock", "patched"}, 2)
	for _, l := range tr.order {
		if err := tr.enter(t.Context(), l); err != nil {
			t.Fatal(err)
		}
	}
	stock, patched := tr.Ready("stock"), tr.Ready("patched")
	select {
	case <-stock:
	default:
		t.Fatal("stock, first in order and ready, was not granted the turn")
	}
	close(ended)
	tr.set("stock", gone)
	select {
	case <-patched:
		t.Error("patched was granted the turn after the run ended")
	default:
	}
}
