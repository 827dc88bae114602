package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// These tests run the real loop (netns, tap, qdisc, QEMU, perf, pinning,
// teardown) with a QEMU that has no kernel (it idles in the firmware), a
// fake agent and a fake generator that runs a real process in the netns.
// They need root, /dev/net/tun and qemu; perf when the scenario asks.

func needHost(t *testing.T, tools ...string) {
	t.Helper()
	testenv.NeedRoot(t, "network namespaces, tap")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
	for _, tool := range append([]string{qemu.DefaultBinary}, tools...) {
		testenv.NeedCommand(t, tool, "")
	}
}

func loadCells(t testing.TB, yaml string) []scenarios.Cell {
	t.Helper()
	s, err := scenarios.Load("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return scenarios.Order(s.Expand(), 1)
}

const loopScenario = `
name: loop
backend: tap
qdisc: [pfifo_fast, noqueue]
guest: {vcpus: 1, memory: 128MiB}
pin: {vcpu: "0"}
generator:
  trafgen: {duration: 1s}
perf:
  stat: {targets: [qemu, vcpu, generator], events: [task-clock, context-switches]}
repetitions: 2
timeouts: {boot: 20s, teardown: 10s}
`

type fakeAgent struct {
	rx       atomic.Uint64
	never    bool // WaitReady blocks until ctx ends
	closed   atomic.Bool
	statsErr error
}

func (a *fakeAgent) WaitReady(ctx context.Context) error {
	if a.never {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}
func (a *fakeAgent) Stats(context.Context) (GuestStats, error) {
	return GuestStats{RxPackets: a.rx.Add(1000)}, a.statsErr
}
func (a *fakeAgent) Do(context.Context, string, string, ...string) (string, error) { return "", nil }
func (a *fakeAgent) Sink(context.Context, string) error                            { return nil }
func (a *fakeAgent) Poweroff(context.Context) error                                { return nil }
func (a *fakeAgent) Close() error                                                  { a.closed.Store(true); return nil }

// fakeGen runs `sleep` inside the netns for its duration.
type fakeGen struct {
	d        time.Duration
	failWait bool
	waitErr  func() error  // Wait's error after the traffic (optional)
	na       string        // Start says the configuration is not supported
	started  chan struct{} // closed when traffic runs (optional)
	p        proc.Process
	start    time.Time
}

func (g *fakeGen) Start(ctx context.Context, w *Window) error {
	if g.na != "" {
		return workload.Unsupported("%s", g.na)
	}
	p, err := w.Exec.Start(ctx, proc.Cmd{Argv: []string{"sleep", "60"}, Netns: w.Netns})
	if err != nil {
		return err
	}
	g.p, g.start = p, time.Now()
	if g.started != nil {
		close(g.started)
	}
	return nil
}
func (g *fakeGen) Threads() ([]int, bool) { return []int{g.p.Pid()}, true }
func (g *fakeGen) Wait(ctx context.Context) (*workload.Result, error) {
	select {
	case <-time.After(g.d):
	case <-ctx.Done():
	}
	g.p.Stop(syscall.SIGTERM, time.Second)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if g.failWait {
		return nil, errors.New("generator exploded")
	}
	if g.waitErr != nil {
		return nil, g.waitErr()
	}
	return &workload.Result{Metrics: map[metric.Key]float64{"tx_pps": 5000 / g.d.Seconds()}, Elapsed: time.Since(g.start), BusyFrac: 1}, nil
}

type harness struct {
	opts  Options
	agent *fakeAgent
	mu    sync.Mutex
	gens  []*fakeGen
	mkGen func(n int) *fakeGen
}

func newHarness(t testing.TB) *harness {
	h := &harness{agent: &fakeAgent{}}
	h.mkGen = func(int) *fakeGen { return &fakeGen{d: 300 * time.Millisecond} }
	h.opts = Options{
		Dir:      filepath.Join(t.TempDir(), "run"),
		Scenario: "loop", Seed: 1, LockPath: filepath.Join(t.TempDir(), "lock"),
		Image:     func(context.Context, scenarios.Guest, GuestContents) (*GuestImage, error) { return &GuestImage{}, nil },
		DialAgent: func(context.Context, *qemu.VM) (Agent, error) { return h.agent, nil },
		NewGenerator: func(*scenarios.Cell) (workload.Generator, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			g := h.mkGen(len(h.gens))
			h.gens = append(h.gens, g)
			return g, nil
		},
	}
	return h
}

// checkNothingLeft fails when the run left its netns or a child process.
func checkNothingLeft(t *testing.T, sum *Summary) {
	t.Helper()
	if sum != nil && sum.Netns != "" {
		if _, err := os.Stat(filepath.Join("/run/netns", sum.Netns)); err == nil {
			t.Errorf("netns %s left behind", sum.Netns)
		}
	}
	var kids []int
	for i := 0; i < 50; i++ {
		kids = proc.Children(os.Getpid())
		if len(kids) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, k := range kids {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(k) + "/cmdline")
		t.Errorf("child process %d left behind: %s", k, strings.ReplaceAll(string(b), "\x00", " "))
	}
}

func readSamples(t testing.TB, dir string) []results.Sample {
	t.Helper()
	set, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return set.Samples
}

func TestRunLoop(t *testing.T) {
	needHost(t, "perf")
	cells := loadCells(t, loopScenario)
	h := newHarness(t)
	sum, err := Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Samples != 4 || sum.Skipped != 0 {
		t.Fatalf("summary %+v", sum)
	}
	samples := readSamples(t, h.opts.Dir)
	if len(samples) != 4 {
		t.Fatalf("%d samples", len(samples))
	}
	for _, s := range samples {
		m := s.Metrics
		if m["tx_pps"] <= 0 || m["rx_pps"] <= 0 || s.WindowS < 0.3 {
			t.Errorf("%s rep %d: metrics %v window %v", s.Cell, s.Rep, m, s.WindowS)
		}
		for _, k := range []metric.Key{"perf.task-clock@qemu", "perf.task-clock@vcpu", "perf.task-clock@trafgen", "harness_cpu_frac", "cell_overhead_s"} {
			// A vCPU idling in firmware may not run at all in the window:
			// perf then says <not counted>, which must show as a warning.
			if k == "perf.task-clock@vcpu" && slices.ContainsFunc(s.Warnings, func(w string) bool {
				return strings.HasPrefix(w, "perf stat vcpu: ") && strings.Contains(w, "task-clock") && strings.Contains(w, "<not counted>")
			}) {
				continue
			}
			if _, ok := m[k]; !ok {
				t.Errorf("%s rep %d: no %s in %v", s.Cell, s.Rep, k, m)
			}
		}
		if !s.Emulated || len(s.Warnings) == 0 {
			t.Errorf("TCG sample not marked: emulated=%v warnings=%v", s.Emulated, s.Warnings)
		}
		for _, a := range s.Artifacts {
			if _, err := os.Stat(filepath.Join(h.opts.Dir, a)); err != nil {
				t.Errorf("artifact %s: %v", a, err)
			}
		}
	}
	// One guest for every cell: only host knobs (qdisc) differ.
	if n := strings.Count(readFile(t, filepath.Join(h.opts.Dir, "reproduce.sh")), "qemu-system-x86_64"); n != 1 {
		t.Errorf("guest started %d times, want 1 (reused across qdisc cells)", n)
	}
	// --resume: nothing left to do.
	h.opts.Resume = true
	sum, err = Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	if err != nil || sum.Samples != 0 || sum.Skipped != 4 {
		t.Fatalf("resume: %+v %v", sum, err)
	}
}

func readFile(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A cell whose traffic fails is recorded as failed and the run goes on
// (a lab run of 36 cells is not lost to one hung iperf3); the run ends
// as a measured failure naming it, and --resume runs that cell again.
func TestRunGeneratorFails(t *testing.T) {
	needHost(t, "perf")
	cells := loadCells(t, loopScenario)
	h := newHarness(t)
	h.mkGen = func(n int) *fakeGen { return &fakeGen{d: 200 * time.Millisecond, failWait: n == 2} }
	sum, err := Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	var ke *KernelFaultError
	var ce *CellError
	if !errors.As(err, &ke) || len(ke.Failed) != 1 || !errors.As(err, &ce) || ce.Phase != "traffic" || !strings.Contains(err.Error(), "generator exploded") {
		t.Fatalf("err = %v, want one failed cell in its traffic", err)
	}
	set, err := results.Load(h.opts.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if ok, failed := len(set.Samples), len(set.Failed); ok != 3 || failed != 1 {
		t.Errorf("%d samples and %d failed ones, want the 3 others and 1 failed", ok, failed)
	}
	h.mkGen = func(int) *fakeGen { return &fakeGen{d: 100 * time.Millisecond} }
	h.opts.Resume = true
	sum, err = Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	if err != nil || sum.Samples != 1 || sum.Skipped != 3 {
		t.Fatalf("resume: %+v %v, want the failed cell run again", sum, err)
	}
}

// A guest whose counters cannot be read (its agent's socket broke under
// TCG in TCG) fails its cell; the next cell runs on a fresh guest.
func TestRunCountersFailCell(t *testing.T) {
	needHost(t, "perf")
	cells := loadCells(t, loopScenario)
	h := newHarness(t)
	h.agent.statsErr = errors.New("agent stats: send: write unix @->agent.sock: write: broken pipe")
	sum, err := Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	var ke *KernelFaultError
	if !errors.As(err, &ke) || len(ke.Failed) != len(cells) || !strings.Contains(err.Error(), "counters") {
		t.Fatalf("err = %v, want every cell failed in its counters, the run not ended at the first", err)
	}
}

// A void measurement (fault.ErrVoid: pktgen removed its device late) is
// run once more on the same guest, and the sample says so.
func TestRunVoidMeasurementRetried(t *testing.T) {
	needHost(t, "perf")
	cells := loadCells(t, loopScenario)
	h := newHarness(t)
	h.mkGen = func(n int) *fakeGen {
		g := &fakeGen{d: 100 * time.Millisecond}
		if n == 1 {
			g.waitErr = func() error {
				return fault.VoidBecause("a pktgen thread removed its device late", errors.New("kpktgend_1 removed the device"))
			}
		}
		return g
	}
	sum, err := Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	if err != nil || sum.Samples != len(cells) {
		t.Fatalf("run: %+v %v, want every cell measured", sum, err)
	}
	notes, causes := 0, 0
	for _, s := range readSamples(t, h.opts.Dir) {
		if strings.Contains(strings.Join(s.Warnings, " "), "ran again after a void measurement: ") {
			notes++
		}
		switch s.VoidRerun {
		case "a pktgen thread removed its device late":
			causes++
		case "":
		default:
			t.Errorf("sample %s rep %d: void_rerun %q", s.Cell, s.Rep, s.VoidRerun)
		}
	}
	if notes != 1 || causes != 1 || len(h.gens) != len(cells)+1 {
		t.Errorf("%d samples say they ran again (%d with the cause), %d generators for %d cells: want 1 (1) and one more than the cells", notes, causes, len(h.gens), len(cells))
	}
}

// A configuration the kernel refuses is the cell's result, not the run's
// failure: a sample marked Unsupported with the reason, and the run goes on.
func TestRunUnsupportedCell(t *testing.T) {
	needHost(t, "perf")
	cells := loadCells(t, loopScenario)
	h := newHarness(t)
	h.mkGen = func(n int) *fakeGen {
		g := &fakeGen{d: 100 * time.Millisecond}
		if n == 1 {
			g.na = "zero-copy refused"
		}
		return g
	}
	sum, err := Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	if err != nil || sum.Samples != 4 {
		t.Fatalf("run: %+v %v", sum, err)
	}
	na := 0
	for _, s := range readSamples(t, h.opts.Dir) {
		if s.Unsupported != "" {
			na++
			if s.Unsupported != "zero-copy refused" || len(s.Metrics) != 0 || s.Labels["generator"] != "trafgen" {
				t.Errorf("n/a sample %+v", s)
			}
		} else if s.Metrics["tx_pps"] <= 0 {
			t.Errorf("measured sample %+v", s)
		}
	}
	if na != 1 {
		t.Errorf("%d n/a samples, want 1", na)
	}
}

// SIGINT (ctx cancel) while traffic and perf run: teardown, kept results.
func TestRunCancelDuringTraffic(t *testing.T) {
	needHost(t, "perf")
	cells := loadCells(t, loopScenario)
	h := newHarness(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	h.mkGen = func(n int) *fakeGen {
		g := &fakeGen{d: 200 * time.Millisecond}
		if n == 1 {
			g.d = time.Minute
			g.started = make(chan struct{})
			go func() { <-g.started; time.Sleep(300 * time.Millisecond); cancel() }()
		}
		return g
	}
	sum, err := Run(ctx, cells, h.opts)
	checkNothingLeft(t, sum)
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("err = %v", err)
	}
	if got := len(readSamples(t, h.opts.Dir)); got != 1 {
		t.Errorf("%d samples kept, want 1", got)
	}
}

// SIGINT while the guest boots.
func TestRunCancelDuringBoot(t *testing.T) {
	needHost(t)
	cells := loadCells(t, loopScenario)
	h := newHarness(t)
	h.agent.never = true
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(1500*time.Millisecond, cancel)
	start := time.Now()
	sum, err := Run(ctx, cells, h.opts)
	checkNothingLeft(t, sum)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("cancel took %v", d)
	}
}

// A guest that never becomes ready: the real agent dialer against a QEMU
// without a kernel. The boot timeout names the phase and the console.
func TestRunGuestNeverReady(t *testing.T) {
	needHost(t)
	cells := loadCells(t, strings.Replace(loopScenario, "boot: 20s", "boot: 3s", 1))
	h := newHarness(t)
	h.opts.DialAgent = DialVMImagesAgent
	sum, err := Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	var be *qemu.BootError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "timeout after 3s") || !strings.Contains(err.Error(), "wait for agent") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "undo") {
		t.Errorf("teardown of the failed boot reported errors: %v", err)
	}
}

func hostReady() bool {
	if os.Geteuid() != 0 {
		return false
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return false
	}
	for _, tool := range []string{qemu.DefaultBinary, "perf"} {
		if _, err := exec.LookPath(tool); err != nil {
			return false
		}
	}
	return true
}

// A real guest kernel with a bogus command line (no init to run): the
// kernel panics, QEMU exits (panic=-1, -no-reboot) and the run fails fast
// with the console's last lines, leaving nothing behind.
func TestRunBogusKernelCmdline(t *testing.T) {
	needHost(t)
	img, err := VMImagesBuilder("/bin/busybox")(t.Context(), scenarios.Guest{}, GuestContents{})
	testenv.SkipUnavailable(t, err, "build the guest image")
	cells := loadCells(t, strings.Replace(loopScenario, "boot: 20s", "boot: 5m", 1))
	h := newHarness(t)
	h.opts.DialAgent = DialVMImagesAgent
	h.opts.Image = func(context.Context, scenarios.Guest, GuestContents) (*GuestImage, error) {
		bad := *img
		bad.Cmdline = "rdinit=/vnb-no-such-init root=/dev/vnb-nothing"
		return &bad, nil
	}
	start := time.Now()
	sum, err := Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	var be *qemu.BootError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "qemu exited during boot") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(be.Console, "panic") && !strings.Contains(be.Console, "Panic") {
		t.Errorf("console tail lacks the panic: %q", be.Console)
	}
	if d := time.Since(start); d > 4*time.Minute {
		t.Errorf("took %v: should fail when QEMU exits, not at the boot timeout", d)
	}
}

// prepGen is a fakeGen with a slow start-up in Prepare (testpmd's EAL
// init, say) whose traffic begins at Start; na makes Prepare refuse the
// configuration.
type prepGen struct {
	fakeGen
	mu                        sync.Mutex
	prepNA                    string
	threadsAt, startAt, ready time.Time
}

func (g *prepGen) Prepare(ctx context.Context, w *Window) error {
	if g.prepNA != "" {
		return workload.Unsupported("%s", g.prepNA)
	}
	if err := g.fakeGen.Start(ctx, w); err != nil {
		return err
	}
	time.Sleep(700 * time.Millisecond)
	g.ready = time.Now()
	return nil
}

func (g *prepGen) Threads() ([]int, bool) {
	g.mu.Lock()
	if g.threadsAt.IsZero() {
		g.threadsAt = time.Now()
	}
	g.mu.Unlock()
	return g.fakeGen.Threads()
}

func (g *prepGen) Start(context.Context, *Window) error {
	g.mu.Lock()
	g.startAt = time.Now()
	g.mu.Unlock()
	g.start = g.startAt
	return nil
}

func (g *prepGen) Release() { g.p.Stop(syscall.SIGKILL, time.Second) }

// A Preparer's window opens at Start: after its start-up, after the
// runner took its threads (perf, pinning); the window is its traffic. A
// Prepare that refuses the configuration makes the cell n/a.
func TestRunPreparedGenerator(t *testing.T) {
	needHost(t, "perf")
	cells := loadCells(t, `
name: prepared
backend: tap
guest: {vcpus: 1, memory: 128MiB}
generator:
  trafgen: {duration: 1s}
perf:
  stat: {targets: [generator], events: [task-clock]}
repetitions: 2
timeouts: {boot: 20s, teardown: 10s}
`)
	h := newHarness(t)
	var gens []*prepGen
	h.opts.NewGenerator = func(*scenarios.Cell) (workload.Generator, error) {
		g := &prepGen{fakeGen: fakeGen{d: 300 * time.Millisecond}}
		if len(gens) == 1 {
			g.prepNA = "zero-copy refused"
		}
		gens = append(gens, g)
		return g, nil
	}
	sum, err := Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	if err != nil {
		t.Fatal(err)
	}
	samples := readSamples(t, h.opts.Dir)
	if len(samples) != 2 || len(gens) != 2 {
		t.Fatalf("%d samples from %d generators", len(samples), len(gens))
	}
	s, g := samples[0], gens[0]
	if g.startAt.IsZero() || g.threadsAt.After(g.startAt) || g.startAt.Before(g.ready) {
		t.Errorf("start-up done %v, threads taken %v, Start %v: want Start last", g.ready, g.threadsAt, g.startAt)
	}
	if s.WindowS < 0.3 || s.WindowS > 0.6 {
		t.Errorf("window %.3fs, want the 0.3s of traffic without the 0.7s start-up", s.WindowS)
	}
	if _, ok := s.Metrics["perf.task-clock"]; !ok {
		t.Errorf("no perf on the generator: %v", s.Metrics)
	}
	if na := samples[1]; na.Unsupported != "zero-copy refused" || len(na.Metrics) != 0 {
		t.Errorf("refused in Prepare: %+v", na)
	}
}

// A relative run directory is refused before anything starts: the tools a
// cell runs in other working directories would resolve it elsewhere (make
// demo's relative -o once reached trafgen, which runs in a temporary
// directory, as a relative config path).
func TestRunRefusesRelativeDir(t *testing.T) {
	_, err := Run(t.Context(), nil, Options{Dir: "runs/x"})
	if err == nil || !strings.Contains(err.Error(), "relative") {
		t.Errorf("relative run dir: got %v, want a refusal naming it relative", err)
	}
	if _, serr := os.Stat("runs"); serr == nil {
		t.Errorf("a refused run created runs/")
	}
}

// Only a failure whose every part is void is repeated: a void device
// joined with a timeout or a real error is that error.
func TestAllVoid(t *testing.T) {
	void := fault.Void(errors.New("kpktgend_1 removed the device"))
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{void, true},
		{fmt.Errorf("pktgen: %w", void), true},
		{errors.Join(void, fault.Void(errors.New("kpktgend_2 too"))), true},
		{fmt.Errorf("traffic: %w", errors.Join(void, context.DeadlineExceeded)), false},
		{errors.Join(void, errors.New("write pgctrl: EIO")), false},
		{errors.New("plain"), false},
		{fault.Input("use burst: 0"), false},
	} {
		if got := allVoid(tc.err); got != tc.want {
			t.Errorf("allVoid(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// Bad input from a cell's tool ends the run at once, as before cells
// could fail alone: every cell would fail the same way.
func TestRunInputErrorEndsRun(t *testing.T) {
	needHost(t, "perf")
	cells := loadCells(t, loopScenario)
	h := newHarness(t)
	h.mkGen = func(n int) *fakeGen {
		return &fakeGen{d: 50 * time.Millisecond, waitErr: func() error { return fault.Input("pktgen: burst 8 not supported by this device: use burst: 0") }}
	}
	sum, err := Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	var ke *KernelFaultError
	if !errors.Is(err, fault.ErrInput) || errors.As(err, &ke) || len(h.gens) != 1 {
		t.Fatalf("err = %v after %d cells, want the input error from the first cell alone", err, len(h.gens))
	}
}

// A shard without cells (more shards than cells) writes its run
// directory without waiting for the host lock: it measures nothing, and
// need not queue behind another run; a run with cells still queues.
func TestRunEmptyShardTakesNoLock(t *testing.T) {
	h := newHarness(t)
	held, err := AcquireLock(h.opts.LockPath)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	h.opts.Shard, h.opts.ShardSource, h.opts.SeedSource = "3/4", "test", "CI_PIPELINE_ID=5 (test)"
	if _, err := Run(t.Context(), nil, h.opts); err != nil {
		t.Fatalf("empty shard while the lock is held: %v", err)
	}
	env, err := results.ReadEnv(h.opts.Dir)
	if err != nil || env.Extra[ExtraShard] != "3/4" || env.Extra[ExtraSeedSource] != "CI_PIPELINE_ID=5 (test)" {
		t.Errorf("empty shard's env.json %+v (%v)", env, err)
	}
	h.opts.Dir = filepath.Join(t.TempDir(), "run")
	var busy *BusyError
	if _, err := Run(t.Context(), loadCells(t, loopScenario), h.opts); !errors.As(err, &busy) {
		t.Errorf("a shard with cells while the lock is held: %v, want the lock's busy error", err)
	}
}

// A traffic tool that hangs past timeouts.traffic (iperf3 waiting forever
// at the end of its test) measured nothing: the cell runs once more on a
// fresh guest and its sample says why; a second hang fails the cell only.
func TestRunHungTrafficRetried(t *testing.T) {
	needHost(t, "perf")
	cells := loadCells(t, strings.Replace(loopScenario, "teardown: 10s", "teardown: 10s, traffic: 2s", 1))
	for _, hangs := range [][]int{{2}, {2, 3}} {
		h := newHarness(t)
		h.mkGen = func(n int) *fakeGen {
			if slices.Contains(hangs, n) {
				return &fakeGen{d: time.Hour}
			}
			return &fakeGen{d: 100 * time.Millisecond}
		}
		sum, err := Run(t.Context(), cells, h.opts)
		checkNothingLeft(t, sum)
		set, lerr := results.Load(h.opts.Dir)
		if lerr != nil {
			t.Fatal(lerr)
		}
		// A fresh guest after each hang.
		if n := strings.Count(readFile(t, filepath.Join(h.opts.Dir, "reproduce.sh")), "qemu-system-x86_64"); n != 1+len(hangs) {
			t.Errorf("hangs %v: guest started %d times, want %d", hangs, n, 1+len(hangs))
		}
		if len(hangs) == 2 {
			var ke *KernelFaultError
			if !errors.As(err, &ke) || len(ke.Failed) != 1 || !strings.Contains(err.Error(), "did not finish within timeouts.traffic 2s") {
				t.Errorf("hung twice: err = %v, want the one cell failed naming timeouts.traffic", err)
			}
			if len(set.Samples) != 3 || len(set.Failed) != 1 {
				t.Errorf("hung twice: %d samples, %d failed; want 3 and 1", len(set.Samples), len(set.Failed))
			}
			continue
		}
		if err != nil || len(set.Samples) != 4 || len(set.Failed) != 0 {
			t.Fatalf("hung once: %v, %d samples, %d failed; want no error, 4 and 0", err, len(set.Samples), len(set.Failed))
		}
		causes := 0
		for _, s := range set.Samples {
			if s.VoidRerun == HungCause && strings.Contains(strings.Join(s.Warnings, " "), "did not finish within timeouts.traffic 2s") {
				causes++
			}
		}
		if causes != 1 {
			t.Errorf("hung once: %d samples ran again for the hang, want 1", causes)
		}
	}
}

// Options.Turn (a lab's turn to measure) is called once, right before
// the run's first measurement: the first sample's guest is up and its
// host knobs are set, no generator has run (no warmup, no window). The
// first sample's phases say how long it waited; an error there fails
// that sample only.
func TestRunTurnBeforeFirstWindow(t *testing.T) {
	needHost(t)
	cells := loadCells(t, `
name: turn
backend: tap
guest: {vcpus: 1, memory: 128MiB}
generator:
  trafgen: {duration: 1s}
warmup: 1s
repetitions: 2
timeouts: {boot: 20s, teardown: 10s}
`)
	h := newHarness(t)
	calls := 0
	h.opts.Turn = func(ctx context.Context) error {
		calls++
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.gens) != 0 {
			t.Errorf("turn after %d generators: want it before the first warmup and window", len(h.gens))
		}
		return nil
	}
	sum, err := Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	if err != nil {
		t.Fatal(err)
	}
	samples := readSamples(t, h.opts.Dir)
	if calls != 1 || len(samples) != 2 {
		t.Fatalf("turn called %d times, %d samples; want once, 2", calls, len(samples))
	}
	for i, s := range samples {
		if got := strings.Contains(s.Labels["phases_s"], ", turn "); got != (i == 0) {
			t.Errorf("sample %d phases %q: want a turn phase in the first only", i, s.Labels["phases_s"])
		}
	}
}
