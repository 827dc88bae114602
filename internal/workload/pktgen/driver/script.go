package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/perfparse"
)

// sampleScripts maps a mode to the kernel's sample script.
var sampleScripts = map[string]string{
	ModeSimple:          "pktgen_sample01_simple.sh",
	ModeMultiqueue:      "pktgen_sample02_multiqueue.sh",
	ModeBurstSingleFlow: "pktgen_sample03_burst_single_flow.sh",
}

// ScriptConfig runs one of the kernel's own samples/pktgen scripts.
type ScriptConfig struct {
	Config
	// KernelTree is a kernel source tree holding samples/pktgen.
	KernelTree string
	// Script is the script's file name in samples/pktgen, e.g.
	// "pktgen_sample02_multiqueue.sh". "" = the sample Sample mirrors.
	Script string
	// Sample chooses the script by the mode it mirrors when Script is
	// empty: simple (sample01, default), multiqueue (sample02) or
	// burst_single_flow (sample03).
	Sample string
	// Netns runs the script in that network namespace (ip netns exec):
	// pktgen is per namespace, and the script's /proc/net/pktgen and
	// pgctrl writes act on its own. "" = the caller's.
	Netns string
}

// scriptPlanMode is the native mode whose device naming a script uses:
// sample01 adds the device itself to thread 0; the other samples and the
// bench_xmit_mode scripts add DEV@N to thread N.
func scriptPlanMode(name string) string {
	switch name {
	case sampleScripts[ModeSimple]:
		return ModeSimple
	case sampleScripts[ModeBurstSingleFlow]:
		return ModeBurstSingleFlow
	}
	return ModeMultiqueue
}

// ScriptPath is the script's path in the tree.
func (c ScriptConfig) ScriptPath() (string, error) {
	name := c.Script
	if name == "" {
		sample := c.Sample
		if sample == "" {
			sample = ModeSimple
		}
		var ok bool
		if name, ok = sampleScripts[sample]; !ok {
			return "", configErrorf("unknown sample %q for script mode; use simple, multiqueue or burst_single_flow", sample)
		}
	}
	if name != filepath.Base(name) || !strings.HasSuffix(name, ".sh") {
		return "", configErrorf("script %q: give a file name in samples/pktgen such as pktgen_sample02_multiqueue.sh", name)
	}
	if c.KernelTree == "" {
		return "", configErrorf("script mode needs a kernel source tree (script_dir) holding samples/pktgen")
	}
	return filepath.Join(c.KernelTree, "samples", "pktgen", name), nil
}

// CheckScript reports whether the script exists, as a one-line input
// error that says what to fix.
func (c ScriptConfig) CheckScript() error {
	path, err := c.ScriptPath()
	if err != nil {
		return err
	}
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		return configErrorf("script %s not found: script_dir must be a kernel source tree with samples/pktgen (e.g. script_dir: ~/linux)", path)
	}
	return nil
}

// ScriptCmd returns the command that runs the sample script: argv only,
// values passed as separate arguments (-i -m -d -n -t [-b] -s [-f -c -w -p -6]),
// and the plan whose devices the script creates. It is pure.
func ScriptCmd(c ScriptConfig) (proc.Cmd, *Plan, error) {
	script, err := c.ScriptPath()
	if err != nil {
		return proc.Cmd{}, nil, err
	}
	name := filepath.Base(script)
	cfg := c.Config
	cfg.Mode = scriptPlanMode(name)
	if cfg.Mode == ModeSimple && (cfg.Threads > 1 || cfg.FirstThread != 0) {
		return proc.Cmd{}, nil, configErrorf("%s sends from one thread on CPU 0 (it ignores -t and -f); use pktgen_sample02_multiqueue.sh for threads %d, first CPU %d", name, max(cfg.Threads, 1), cfg.FirstThread)
	}
	if (cfg.XmitMode != "" && cfg.XmitMode != "start_xmit") || cfg.UDPSrcMin != 0 || cfg.UDPSrcMax != 0 {
		return proc.Cmd{}, nil, configErrorf("%s sets its own xmit mode and UDP source ports; remove xmit_mode and udp_src_min/max, or use a native mode", name)
	}
	p, err := NewPlan(cfg) // validates values and names the devices
	if err != nil {
		return proc.Cmd{}, nil, err
	}
	cfg = p.Config
	argv := []string{"bash", script,
		"-i", cfg.Dev,
		"-m", cfg.DstMAC,
		"-d", cfg.Dst,
		"-n", strconv.FormatUint(cfg.Count, 10),
		"-t", strconv.Itoa(cfg.Threads),
	}
	if cfg.Burst != 0 || cfg.BurstSet {
		// As the native plan: -b only when the scenario sets burst (the
		// scripts leave it unwritten without -b).
		argv = append(argv, "-b", strconv.Itoa(cfg.Burst))
	}
	argv = append(argv, "-s", strconv.Itoa(cfg.PktSize))
	if cfg.FirstThread != 0 {
		argv = append(argv, "-f", strconv.Itoa(cfg.FirstThread))
	}
	if cfg.CloneSkb != 0 {
		argv = append(argv, "-c", strconv.Itoa(cfg.CloneSkb))
	}
	if cfg.Delay != 0 {
		argv = append(argv, "-w", strconv.FormatInt(cfg.Delay.Nanoseconds(), 10))
	}
	if cfg.UDPDstMin != 0 {
		argv = append(argv, "-p", fmt.Sprintf("%d-%d", cfg.UDPDstMin, max(cfg.UDPDstMax, cfg.UDPDstMin)))
	}
	if strings.Contains(cfg.Dst, ":") {
		argv = append(argv, "-6")
	}
	return proc.Cmd{Argv: argv, Dir: filepath.Dir(script), Netns: c.Netns}, p, nil
}

// ScriptRun is a running sample script.
type ScriptRun struct {
	d       *Driver
	pr      proc.Process
	plan    *Plan
	out     *bytes.Buffer
	start   time.Time
	quit    chan struct{} // closed by Wait: the window's timers stop
	expired chan struct{}
	// drops0 is the tap's tx_dropped before the script started.
	drops0   uint64
	drops0OK bool
	counters counterBracket
}

// StartScript checks the script and the device and starts the script with
// exec (it configures pktgen and writes pgctrl start itself).
func (d *Driver) StartScript(ctx context.Context, exec proc.Executor, c ScriptConfig) (*ScriptRun, error) {
	cmd, p, err := ScriptCmd(c)
	if err != nil {
		return nil, err
	}
	if err := c.CheckScript(); err != nil {
		return nil, err
	}
	if err := d.Check(p.Config.Dev); err != nil {
		return nil, err
	}
	s := &ScriptRun{d: d, plan: p, out: &bytes.Buffer{}, quit: make(chan struct{}), expired: make(chan struct{})}
	cmd.Stdout = s.out
	started := &markerWriter{marker: []byte(StartMarker), seen: make(chan struct{})}
	cmd.Stderr = started
	// The script writes pgctrl start itself: its drops are read around
	// the whole script (its setup writes drop nothing).
	s.drops0, s.drops0OK = d.TxDropped(p.Config.Dev)
	s.counters = d.openCounters()
	s.start = time.Now()
	if s.pr, err = exec.Start(ctx, cmd); err != nil {
		return nil, err
	}
	if p.Config.Duration > 0 {
		// The window opens when the script starts pktgen, not when the
		// script starts: its setup (a reset, then a write and a read-back
		// per device and parameter) took longer than a 3 s window for 4
		// threads under TCG, and a SIGINT before the script traps it
		// kills the script, whose exit trap resets pktgen: no result.
		go s.window(started.seen, p.Config.Duration)
	}
	return s, nil
}

// StartMarker is what the kernel's samples/pktgen scripts print on stderr
// right before they write "start" to pgctrl (every script in Linux 6.1's
// samples/pktgen does).
const StartMarker = "Running... ctrl^C to stop"

// ScriptSetupGrace bounds the wait for [StartMarker]: the duration of a
// script that never prints it (a script of one's own) counts from this
// long after the script's start.
const ScriptSetupGrace = 2 * time.Minute

// markerWriter discards what is written to it and closes seen once marker
// has been written (also split across writes).
type markerWriter struct {
	marker []byte
	tail   []byte
	once   sync.Once
	seen   chan struct{}
}

func (w *markerWriter) Write(p []byte) (int, error) {
	w.tail = append(w.tail, p...)
	if bytes.Contains(w.tail, w.marker) {
		w.signal()
	}
	if keep := len(w.marker) - 1; len(w.tail) > keep {
		w.tail = append(w.tail[:0], w.tail[len(w.tail)-keep:]...)
	}
	return len(p), nil
}

func (w *markerWriter) signal() { w.once.Do(func() { close(w.seen) }) }

// window closes s.expired d after started is closed (or after
// ScriptSetupGrace without it), unless the script ends or Wait returns
// first.
func (s *ScriptRun) window(started <-chan struct{}, d time.Duration) {
	grace := time.NewTimer(ScriptSetupGrace)
	defer grace.Stop()
	select {
	case <-started:
	case <-grace.C:
	case <-s.pr.Done():
		return
	case <-s.quit:
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		close(s.expired)
	case <-s.pr.Done():
	case <-s.quit:
	}
}

// Plan is the plan whose devices the script configures.
func (s *ScriptRun) Plan() *Plan { return s.plan }

// Wait waits for the script to finish, the duration to end or ctx to be
// done (both SIGINT the script, like the user's ctrl-C: pktgen stops and
// keeps its Results), parses the Results the script printed, reads any
// device it did not print from the proc directory and resets pktgen.
// Output returns what the script printed.
func (s *ScriptRun) Wait(ctx context.Context) (*Result, error) {
	res := &Result{}
	var errs []error
	select {
	case <-s.pr.Done():
	case <-s.expired:
		res.Stopped = true
		_ = s.pr.Stop(syscall.SIGINT, 10*time.Second)
	case <-ctx.Done():
		res.Stopped = true
		_ = s.pr.Stop(syscall.SIGINT, 10*time.Second)
		errs = append(errs, ctx.Err())
	}
	close(s.quit)
	res.Elapsed = time.Since(s.start)
	if werr := s.pr.Wait(); werr != nil && !res.Stopped {
		errs = append(errs, fmt.Errorf("pktgen script: %w", werr))
	}
	if d1, ok := s.d.TxDropped(s.plan.Config.Dev); ok && s.drops0OK && d1 >= s.drops0 {
		res.TxDropped, res.TxDroppedOK = d1-s.drops0, true
	}
	s.counters.close(s.d, res)
	var rerrs []error
	res.Threads, rerrs = s.d.results(s.plan.Devices, ParseScriptOutput(s.out.String()))
	errs = append(errs, rerrs...)
	errs = append(errs, unfinished(res.Threads)...)
	if err := s.d.clearAfter(); err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// unfinished is an error for each thread whose Result the script printed
// before its run ended (Idle: its kpktgend had not taken the start;
// Starting: still running). The script's own start returned early, as
// pktgen's does when a thread has not run within its 125 ms (see the
// Driver's awaitRun), and the script's exit then reset pktgen: the run is
// void, not a thread that sent nothing.
func unfinished(threads []ThreadResult) []error {
	var errs []error
	for _, t := range threads {
		if !t.Unfinished() {
			continue
		}
		errs = append(errs, fault.VoidBecause("a pktgen thread had not finished its device", fmt.Errorf("pktgen script: %s: the script printed \"Result: %s\" (kpktgend_%d had not run the device to its end when the script's start returned: pktgen's start waits only 125 ms for a thread starved of CPU); the run is void, run it again", t.Device, t.Msg, t.Thread)))
	}
	return errs
}

// Output is what the script wrote: stdout in full, then the tail of its
// stderr. Call it after Wait.
func (s *ScriptRun) Output() string {
	_, stderr := s.pr.Output()
	out := s.out.String()
	if stderr != "" {
		out += "--- stderr ---\n" + stderr
	}
	return out
}

// Script is StartScript then Wait.
func (d *Driver) Script(ctx context.Context, exec proc.Executor, c ScriptConfig) (*Result, error) {
	s, err := d.StartScript(ctx, exec, c)
	if err != nil {
		return nil, err
	}
	return s.Wait(ctx)
}

// ParseScriptOutput reads what the sample scripts print (sample01's
// "Result device: DEV" followed by the whole proc file, the others'
// "Device: DEV@N" followed by the Result lines) with
// perfparse.ParsePktgenScript. Output it cannot read gives an empty map:
// the caller then reads the device files.
func ParseScriptOutput(out string) map[string]ThreadResult {
	res := map[string]ThreadResult{}
	ps, err := perfparse.ParsePktgenScript(strings.NewReader(out))
	if err != nil {
		return res
	}
	for _, d := range ps.Devices {
		if tr, err := fromResult(d.Result, ""); err == nil {
			res[d.Device] = tr
		}
	}
	return res
}
