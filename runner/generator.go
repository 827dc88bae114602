package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/perfparse"
	"github.com/vnetbench/vnetbench/runner/proc"
	"github.com/vnetbench/vnetbench/scenarios"
)

// Generator drives traffic into the tap for one measurement window (or
// one warmup). A Generator is used once: Start, then Wait. The runner
// starts perf on Threads right after Start returns and stops it when Wait
// returns, so the window is the generator's run.
//
// Implementations here: trafgen and iperf3 (processes in the run's netns)
// and pktgen (runner/pktgen's /proc driver, adapted by pktgenGenerator).
// Another generator only has to satisfy this interface and be returned by
// Options.NewGenerator.
type Generator interface {
	// Kind is "pktgen", "trafgen" or "iperf3".
	Kind() string
	// Start starts the traffic and returns once it runs.
	Start(ctx context.Context, w *Window) error
	// Threads returns the generator's host threads (for perf and
	// pinning); whole is true when they are process ids to be followed
	// with all their threads (perf -p).
	Threads() (tids []int, whole bool)
	// Wait waits for the end of the traffic (duration or count, bounded by
	// ctx) and returns what the generator measured.
	Wait(ctx context.Context) (*GenResult, error)
}

// Window is what a generator needs to know about the cell it drives.
type Window struct {
	Exec      proc.Executor
	Netns     string // network namespace of the tap ("" = the harness's)
	NetnsPid  int    // a process inside Netns (QEMU), for /proc/PID/net views
	Dev       string // the tap
	DevMAC    string // the tap's MAC
	Dst       string // the guest's IP
	DstMAC    string // the guest's MAC
	Artifacts string // directory for raw outputs (absolute)
	RelDir    string // the same, relative to the run directory
	// Duration overrides the generator's own duration (warmup); 0 = as
	// configured.
	Duration time.Duration
	// Agent is the guest agent (iperf3 server).
	Agent Agent
	// InNetns runs fn on a thread inside Netns (pktgen's pgctrl acts on
	// the writer's namespace); nil = the harness's namespace.
	InNetns func(fn func() error) error
	// Note adds a line to reproduce.sh for actions that are not commands
	// run through Exec (those are recorded already), e.g. /proc writes.
	Note func(line string)
}

// GenResult is what a generator measured in its window.
type GenResult struct {
	Packets       uint64                 // packets sent (0 = unknown)
	PPS           float64                // the generator's own rate (0 = unknown)
	Threads       []results.ThreadSample // per generator thread (pktgen)
	Errors        uint64                 // generator-reported errors
	ThroughputBps float64                // iperf3 receiver
	Retransmits   float64                // iperf3 sender
	Elapsed       time.Duration          // traffic time as the generator saw it
	BusyFrac      float64                // generator CPU busy fraction (-1 = unknown)
	Artifacts     []string               // raw outputs, relative to the run directory
	Metrics       map[string]float64     // extra metrics
	Warnings      []string
}

// NewGenerator returns the built-in generator for a cell.
func NewGenerator(c *scenarios.Cell) (Generator, error) {
	switch c.Generator.Kind {
	case "trafgen":
		if c.Generator.Trafgen == nil {
			return nil, errors.New("trafgen cell without trafgen settings")
		}
		return &trafgenGen{cfg: *c.Generator.Trafgen}, nil
	case "iperf3":
		if c.Generator.Iperf3 == nil {
			return nil, errors.New("iperf3 cell without iperf3 settings")
		}
		return &iperf3Gen{cfg: *c.Generator.Iperf3}, nil
	case "pktgen":
		if c.Generator.Pktgen == nil {
			return nil, errors.New("pktgen cell without pktgen settings")
		}
		return newPktgenGen(c), nil
	}
	return nil, fmt.Errorf("unknown generator %q", c.Generator.Kind)
}

// ---- trafgen ----

type trafgenGen struct {
	cfg     scenarios.Trafgen
	w       *Window
	p       proc.Process
	start   time.Time
	dur     time.Duration
	cpu0    map[int]uint64
	outFile string
}

func (g *trafgenGen) Kind() string { return "trafgen" }

func (g *trafgenGen) Start(ctx context.Context, w *Window) error {
	g.w = w
	g.dur = g.cfg.Duration
	if w.Duration > 0 {
		g.dur = w.Duration
	}
	if g.dur <= 0 {
		g.dur = 10 * time.Second
	}
	cfgPath := filepath.Join(w.Artifacts, "trafgen.cfg")
	if err := os.WriteFile(cfgPath, []byte(TrafgenConfig(g.cfg.PktSize, w.DevMAC, w.DstMAC)), 0o644); err != nil {
		return fmt.Errorf("trafgen: %w", err)
	}
	g.outFile = filepath.Join(w.Artifacts, "trafgen.txt")
	out, err := os.Create(g.outFile)
	if err != nil {
		return fmt.Errorf("trafgen: %w", err)
	}
	c := proc.Cmd{Argv: TrafgenArgs(g.cfg, w.Dev, cfgPath), Netns: w.Netns, Stdout: out, Stderr: out}
	p, err := w.Exec.Start(ctx, c)
	if err != nil {
		out.Close()
		return fmt.Errorf("trafgen: %w", err)
	}
	g.p = p
	g.start = time.Now()
	go func() { p.Wait(); out.Close() }()
	// trafgen forks its workers right away; give them a moment to appear
	// so perf and pinning see them.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if len(childPids(p.Pid())) > 0 {
			break
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(p.Pid())); err != nil {
			break // not a process of this host (test fakes)
		}
		select {
		case <-p.Done():
			return fmt.Errorf("trafgen exited at start: %w", p.Wait())
		case <-time.After(20 * time.Millisecond):
		}
	}
	g.cpu0 = procCPU(g.pids())
	return nil
}

func (g *trafgenGen) pids() []int {
	if g.p == nil {
		return nil
	}
	return append([]int{g.p.Pid()}, childPids(g.p.Pid())...)
}

func (g *trafgenGen) Threads() ([]int, bool) {
	kids := childPids(g.p.Pid())
	if len(kids) == 0 {
		return []int{g.p.Pid()}, true
	}
	return kids, true
}

func (g *trafgenGen) Wait(ctx context.Context) (*GenResult, error) {
	t := time.NewTimer(time.Until(g.start.Add(g.dur)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-g.p.Done():
		return nil, fmt.Errorf("trafgen exited before its duration: %w", exitErr(g.p))
	case <-ctx.Done():
		g.p.Stop(syscall.SIGKILL, time.Second)
		return nil, fmt.Errorf("trafgen: %w", ctx.Err())
	}
	cpu1 := procCPU(g.pids())
	elapsed := time.Since(g.start)
	// SIGINT: trafgen prints its summary and exits.
	err := g.p.Stop(syscall.SIGINT, 5*time.Second)
	if err != nil && proc.ExitCodeOf(err) != 0 && !isSignalExit(err, "interrupt") {
		return nil, fmt.Errorf("trafgen: %w", err)
	}
	out, _ := os.ReadFile(g.outFile)
	pkts, perr := parseTrafgenPackets(out)
	if perr != nil {
		return nil, fmt.Errorf("trafgen: %w (output in %s)", perr, g.outFile)
	}
	r := &GenResult{Packets: pkts, Elapsed: elapsed, BusyFrac: busyFrac(g.cpu0, cpu1, elapsed, max(1, g.cfg.CPUs)),
		Artifacts: []string{filepath.Join(g.w.RelDir, "trafgen.cfg"), filepath.Join(g.w.RelDir, "trafgen.txt")}}
	if elapsed > 0 {
		r.PPS = float64(pkts) / elapsed.Seconds()
	}
	return r, nil
}

// parseTrafgenPackets reads the "N packets outgoing" summary trafgen prints
// on SIGINT.
func parseTrafgenPackets(out []byte) (uint64, error) {
	t, err := perfparse.ParseTrafgen(bytes.NewReader(out))
	if err != nil {
		return 0, err
	}
	if !t.Complete {
		return 0, errors.New(`no "packets outgoing" summary in trafgen's output`)
	}
	return t.Packets, nil
}

// ---- iperf3 ----

type iperf3Gen struct {
	cfg     scenarios.Iperf3
	w       *Window
	p       proc.Process
	start   time.Time
	out     bytes.Buffer
	outFile string
}

func (g *iperf3Gen) Kind() string { return "iperf3" }

func (g *iperf3Gen) Start(ctx context.Context, w *Window) error {
	g.w = w
	cfg := g.cfg
	if w.Duration > 0 {
		cfg.Duration = w.Duration
		cfg.Omit = 0
	}
	if w.Agent != nil {
		if err := w.Agent.Iperf3(ctx, true); err != nil {
			return fmt.Errorf("start iperf3 server in the guest: %w", err)
		}
	}
	g.outFile = filepath.Join(w.Artifacts, "iperf3.json")
	c := proc.Cmd{Argv: Iperf3Args(cfg, w.Dst), Netns: w.Netns, Stdout: &g.out}
	// The server may need a moment after the agent acknowledged it.
	var err error
	for try := 0; try < 20; try++ {
		g.out.Reset()
		g.p, err = w.Exec.Start(ctx, c)
		if err != nil {
			return fmt.Errorf("iperf3: %w", err)
		}
		g.start = time.Now()
		select {
		case <-g.p.Done():
			if strings.Contains(g.out.String(), "Connection refused") || strings.Contains(g.out.String(), "unable to connect") {
				time.Sleep(250 * time.Millisecond)
				continue
			}
		case <-time.After(300 * time.Millisecond):
		}
		return nil
	}
	return fmt.Errorf("iperf3: the guest's server refused connections: %s", lastLine(g.out.String()))
}

func (g *iperf3Gen) Threads() ([]int, bool) { return []int{g.p.Pid()}, true }

func (g *iperf3Gen) Wait(ctx context.Context) (*GenResult, error) {
	select {
	case <-g.p.Done():
	case <-ctx.Done():
		g.p.Stop(syscall.SIGKILL, time.Second)
		return nil, fmt.Errorf("iperf3: %w", ctx.Err())
	}
	elapsed := time.Since(g.start)
	werr := g.p.Wait()
	os.WriteFile(g.outFile, g.out.Bytes(), 0o644)
	if g.w.Agent != nil {
		// Stop the server; a failure here does not spoil the numbers.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		_ = g.w.Agent.Iperf3(sctx, false)
		cancel()
	}
	res, err := perfparse.ParseIperf3(bytes.NewReader(g.out.Bytes()))
	if err != nil {
		if werr != nil {
			return nil, fmt.Errorf("iperf3: %w", werr)
		}
		return nil, fmt.Errorf("iperf3: parse output: %w", err)
	}
	if res.Error != "" {
		return nil, fmt.Errorf("iperf3: %s", res.Error)
	}
	if werr != nil {
		return nil, fmt.Errorf("iperf3: %w", werr)
	}
	r := &GenResult{ThroughputBps: res.ReceiverBitsPerSec, Elapsed: elapsed, BusyFrac: -1,
		Artifacts: []string{filepath.Join(g.w.RelDir, "iperf3.json")}, Metrics: map[string]float64{}}
	if res.HasRetransmits {
		r.Retransmits = float64(res.Retransmits)
		r.Metrics["retransmits"] = r.Retransmits
	}
	if res.CPU != nil {
		// iperf3 reports CPU as a fraction of the whole machine; iperf3
		// before 3.16 runs every stream on one thread, so its busy
		// fraction is that times the CPU count.
		r.Metrics["iperf3_host_cpu_frac"] = res.CPU.HostTotalFrac
		r.BusyFrac = min(1, res.CPU.HostTotalFrac*float64(runtime.NumCPU()))
	}
	return r, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// ---- helpers ----

func exitErr(p proc.Process) error {
	if err := p.Wait(); err != nil {
		return err
	}
	return errors.New("exit status 0")
}

func isSignalExit(err error, sig string) bool {
	var e *proc.ExitError
	return errors.As(err, &e) && e.Signal == sig
}

// childPids lists the direct children of pid (all its threads' children).
func childPids(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "children"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// procCPU returns utime+stime in clock ticks for each pid (whole process).
func procCPU(pids []int) map[int]uint64 {
	m := map[int]uint64{}
	for _, p := range pids {
		if t, ok := readCPUTicks("/proc/" + strconv.Itoa(p) + "/stat"); ok {
			m[p] = t
		}
	}
	return m
}

// readCPUTicks reads utime+stime (fields 14 and 15) of a stat file.
func readCPUTicks(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := string(b)
	r := strings.LastIndexByte(s, ')')
	if r < 0 {
		return 0, false
	}
	f := strings.Fields(s[r+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	return u + st, true
}

// clkTck is USER_HZ, 100 on every Linux ABI that matters here.
const clkTck = 100

// busyFrac is the CPU time between two samples divided by the elapsed time
// and the number of workers (1 = every worker busy all the time).
func busyFrac(a, b map[int]uint64, elapsed time.Duration, workers int) float64 {
	if elapsed <= 0 || len(b) == 0 {
		return -1
	}
	var ticks uint64
	for p, t1 := range b {
		if t0, ok := a[p]; ok && t1 >= t0 {
			ticks += t1 - t0
		} else {
			ticks += t1
		}
	}
	return float64(ticks) / clkTck / elapsed.Seconds() / float64(workers)
}
