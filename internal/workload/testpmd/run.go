package testpmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/workload"
	xdp "github.com/vnetbench/vnetbench/internal/xsk"
	"github.com/vnetbench/vnetbench/internal/xsk/series"
	"github.com/vnetbench/vnetbench/perfparse"
)

// Tool is dpdk-testpmd, from Debian's dpdk-dev.
const Tool = "dpdk-testpmd"

// ParseKinds: dpdk-testpmd's statistics.
func (Workload) ParseKinds() []perfparse.Kind { return []perfparse.Kind{perfparse.TestpmdKind} }

func (Workload) Tools() []workload.Tool {
	return []workload.Tool{{Name: Tool, Package: "dpdk-dev", Version: []string{"dpkg-query", "-W", "-f", "dpdk-dev ${Version}", "dpdk-dev"}}}
}

// PMDFeature is DPDK's AF_XDP driver (librte-net-af-xdp23), which
// testpmd loads as a plug-in.
const PMDFeature = "dpdk net_af_xdp"

func (Workload) Features() []workload.Feature {
	return []workload.Feature{{Name: PMDFeature, Probe: probePMD, Cheap: true}}
}

// pmdGlob finds the AF_XDP PMD where Debian's DPDK looks for plug-ins.
var pmdGlob = "/usr/lib/*/dpdk/pmds-*/librte_net_af_xdp.so*"

func probePMD() workload.Probe {
	m, _ := filepath.Glob(pmdGlob)
	if len(m) > 0 {
		return workload.Probe{OK: true, Detail: "present (" + m[0] + ")"}
	}
	return workload.Probe{Detail: "missing (no " + pmdGlob + ")", Fix: "apt-get install librte-net-af-xdp23 (make deps)",
		Why: "DPDK's AF_XDP driver is not installed (no " + pmdGlob + "); install librte-net-af-xdp23 (make deps)"}
}

func (c *Config) Needs() workload.Needs {
	return workload.Needs{Tools: []string{Tool}, Features: []string{series.Feature, PMDFeature}}
}

func (c *Config) Commands(p workload.PlanEnv) []string {
	cpus := "HOST_CPUS" // every CPU of the host that runs it
	if c.pin != nil {
		cpus = c.CPUSet()
	}
	cmd := proc.Cmd{Argv: Args(*c, p.Dev, p.DstMAC, p.Src, p.Dst, "vnb-PID-N", cpus), Netns: p.Netns}.String()
	return []string{cmd, "# then on its stdin: start, show port stats all; after " + c.Duration.String() + ": show port stats all, stop, quit"}
}

func (c *Config) Generator() workload.Generator { return &generator{cfg: *c} }

// Timeouts of a run: testpmd's start-up (EAL init, mempool, ports) and
// its exit after quit.
var (
	readyTimeout = 2 * time.Minute
	quitTimeout  = 20 * time.Second
)

var prefixSeq atomic.Int32

// generator is a workload.Preparer: Prepare runs testpmd to its prompt
// (perf attaches to it there), Start sends `start`, Wait sends `stop` at
// the window's end.
type generator struct {
	cfg    Config
	w      *workload.Window
	p      proc.Process
	stdin  *os.File
	stdinR *os.File
	out    *promptWriter
	file   string
	prefix string
	dur    time.Duration

	t0, t1    time.Time
	before    hostnet.LinkStats
	beforeErr error
	cpu0      map[int]uint64
	went      bool
	// prepared is the window Prepare ran for.
	prepared *workload.Window
}

// promptWriter keeps testpmd's output (and writes it to a file) and
// says when the interactive prompt appeared.
type promptWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	f      io.Writer
	prompt chan struct{}
	once   sync.Once
}

const prompt = "testpmd> "

func (w *promptWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if w.f != nil {
		w.f.Write(b)
	}
	if bytes.Contains(w.buf.Bytes(), []byte(prompt)) {
		w.once.Do(func() { close(w.prompt) })
	}
	return len(b), nil
}

func (w *promptWriter) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.buf.Bytes())
}

func (g *generator) Prepare(ctx context.Context, w *workload.Window) error {
	g.w = w
	g.dur = g.cfg.Duration
	if w.Duration > 0 {
		g.dur = w.Duration
	}
	if g.cfg.Mode == series.ModeZeroCopy {
		// testpmd cannot force zero-copy (the kernel falls back to copy
		// silently): ask the kernel first.
		c, err := xdp.HostCapability.Get()
		if err != nil {
			return fmt.Errorf("testpmd zerocopy: %w", err)
		}
		if !c.ZeroCopy {
			if why, ok := workload.IsUnsupported(c.ZeroCopyErr); ok {
				return workload.Unsupported("%s", why)
			}
			return workload.Unsupported("AF_XDP zero-copy bind on a tap failed: %v", c.ZeroCopyErr)
		}
	}
	g.prefix = fmt.Sprintf("vnb-%d-%d", os.Getpid(), prefixSeq.Add(1))
	f, file, err := w.CreateArtifact("testpmd.txt")
	g.file = file
	if err != nil {
		return fmt.Errorf("testpmd: %w", err)
	}
	g.out = &promptWriter{f: f, prompt: make(chan struct{})}
	r, wr, err := os.Pipe()
	if err != nil {
		f.Close()
		return fmt.Errorf("testpmd: %w", err)
	}
	g.stdin = wr
	cmd := proc.Cmd{Argv: Args(g.cfg, w.Dev, w.DstMAC, w.Src, w.Dst, g.prefix, g.cfg.CPUSet()), Netns: w.Netns,
		Stdin: r, Stdout: g.out, Stderr: g.out}
	// The read end stays open here until testpmd has exited: a command
	// written after an early exit fills the pipe instead of failing (the
	// exit is noticed on its own).
	g.stdinR = r
	p, err := w.Exec.Start(ctx, cmd)
	if err != nil {
		r.Close()
		wr.Close()
		f.Close()
		return fmt.Errorf("testpmd: %w", err)
	}
	g.p = p
	go func() { p.Wait(); f.Close() }()
	g.prepared = w
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case <-g.out.prompt:
		return nil
	case <-p.Done():
		err = fmt.Errorf("testpmd exited before its prompt: %w%s", proc.WaitErr(p), g.tail())
	case <-t.C:
		err = fmt.Errorf("testpmd: no prompt within %v%s", readyTimeout, g.tail())
	case <-ctx.Done():
		err = fmt.Errorf("testpmd: %w", ctx.Err())
	}
	g.kill()
	return err
}

// tail is the end of testpmd's output for an error, with its errors.
func (g *generator) tail() string {
	out := g.out.bytes()
	if tp, err := perfparse.ParseTestpmd(bytes.NewReader(out)); err == nil && len(tp.Errors) > 0 {
		return " (" + strings.Join(tp.Errors, "; ") + ")"
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	if len(lines) == 0 || lines[0] == "" {
		return ""
	}
	return " (last output: " + strings.Join(lines, " | ") + ")"
}

// kill ends testpmd at once and removes its runtime directory.
func (g *generator) kill() {
	g.stdin.Close()
	g.p.Stop(syscall.SIGKILL, time.Second)
	g.cleanup()
}

// cleanup removes the EAL runtime directory testpmd left (empty with
// --no-shconf).
func (g *generator) cleanup() {
	g.stdinR.Close()
	for _, d := range []string{"/var/run/dpdk/" + g.prefix, "/run/dpdk/" + g.prefix} {
		os.Remove(d)
	}
}

// Threads: the whole testpmd process (main lcore idle at the prompt,
// forwarding lcores).
func (g *generator) Threads() ([]int, bool) { return []int{g.p.Pid()}, true }

func (g *generator) linkStats() (hostnet.LinkStats, error) { return series.LinkStats(g.w) }

func (g *generator) send(cmds ...string) error {
	_, err := io.WriteString(g.stdin, strings.Join(cmds, "\n")+"\n")
	return err
}

// Start starts forwarding (after Prepare, which it runs when the runner
// did not).
func (g *generator) Start(ctx context.Context, w *workload.Window) error {
	if g.prepared != w {
		if err := g.Prepare(ctx, w); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		g.kill()
		return err
	}
	g.before, g.beforeErr = g.linkStats()
	g.cpu0 = proc.CPUTicks([]int{g.p.Pid()})
	g.t0 = time.Now()
	if err := g.send("start", "show port stats all"); err != nil {
		g.kill()
		return fmt.Errorf("testpmd: start: %w", err)
	}
	g.went = true
	return nil
}

// Release ends a prepared testpmd that was never started.
func (g *generator) Release() {
	if g.p != nil {
		g.kill()
	}
}

func (g *generator) Wait(ctx context.Context) (*workload.Result, error) {
	if !g.went {
		g.Release()
		return nil, errors.New("testpmd: Wait without Start")
	}
	t := time.NewTimer(time.Until(g.t0.Add(g.dur)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-g.p.Done():
		err := fmt.Errorf("testpmd exited while forwarding: %w%s", proc.WaitErr(g.p), g.tail())
		g.cleanup()
		return nil, err
	case <-ctx.Done():
		g.kill()
		return nil, fmt.Errorf("testpmd: %w", ctx.Err())
	}
	cpu1 := proc.CPUTicks([]int{g.p.Pid()})
	g.t1 = time.Now()
	err := g.send("show port stats all", "stop", "quit")
	g.stdin.Close()
	if err == nil {
		qt := time.NewTimer(quitTimeout)
		defer qt.Stop()
		select {
		case <-g.p.Done():
		case <-qt.C:
			err = fmt.Errorf("no exit %v after quit", quitTimeout)
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err != nil {
		g.p.Stop(syscall.SIGTERM, 5*time.Second)
	}
	g.p.Wait()
	g.cleanup()
	after, aerr := g.linkStats()
	out := g.out.bytes()
	tp, perr := perfparse.ParseTestpmd(bytes.NewReader(out))
	if perr != nil {
		return nil, fmt.Errorf("testpmd: %w (output in %s)", perr, g.file)
	}
	if tp.Accumulated == nil && len(tp.Forward) == 0 {
		if err != nil {
			return nil, fmt.Errorf("testpmd: stop: %w%s", err, g.tail())
		}
		return nil, fmt.Errorf("testpmd printed no forward statistics (output in %s)%s", g.file, g.tail())
	}
	run := g.t1.Sub(g.t0)
	sec := run.Seconds()
	var sent uint64
	r := &workload.Result{Elapsed: run, Metrics: map[metric.Key]float64{}, CountsDrops: true,
		Artifacts: []string{filepath.Join(g.w.RelDir, "testpmd.txt")}}
	for _, f := range tp.Forward {
		sent += f.TxPackets
		r.Threads = append(r.Threads, workload.Thread{I: g.cfg.FirstQueue + f.Port, TxPPS: float64(f.TxPackets) / sec})
	}
	if tp.Accumulated != nil {
		sent = tp.Accumulated.TxPackets
	}
	if len(r.Threads) == 1 {
		r.Threads = nil // one port: tx_pps says it
	}
	r.Metrics[metric.TxPPS] = float64(sent) / sec
	if g.beforeErr != nil || aerr != nil {
		r.Warnings = append(r.Warnings, fmt.Sprintf("testpmd: lost_pps is over the window, not testpmd's forwarding time: %v", errors.Join(g.beforeErr, aerr)))
	} else {
		// The tap drops only while testpmd forwards: every drop between
		// the readings falls within start..stop.
		r.Metrics[metric.LostPPS] = float64(after.TxDropped-g.before.TxDropped) / sec
	}
	r.BusyFrac = proc.BusyFrac(g.cpu0, cpu1, run, g.cfg.Threads)
	if err != nil {
		r.Warnings = append(r.Warnings, "testpmd: "+err.Error())
	}
	// testpmd's own rate over (almost) the same interval: the port
	// statistics shown after start and before stop.
	var own float64
	for _, ps := range lastPortStats(tp) {
		own += ps.TxPPS
	}
	if tx := r.Metrics[metric.TxPPS]; own > 0 && tx > 0 && (own/tx < 0.85 || own/tx > 1.15) {
		r.Warnings = append(r.Warnings, fmt.Sprintf("testpmd's own Tx-pps (%.0f) differs from TX-packets over its forwarding time (%.0f pps)", own, tx))
	}
	for _, e := range tp.Errors {
		r.Warnings = append(r.Warnings, "testpmd: "+e)
	}
	return r, nil
}

// lastPortStats is each port's last statistics block with rates.
func lastPortStats(tp *perfparse.Testpmd) map[int]perfparse.TestpmdPortStats {
	out := map[int]perfparse.TestpmdPortStats{}
	for _, ps := range tp.PortStats {
		if ps.Throughput {
			out[ps.Port] = ps
		}
	}
	return out
}

var (
	_ workload.Preparer = (*generator)(nil)
	_ workload.Releaser = (*generator)(nil)
)
