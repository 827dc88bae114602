package driver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/perfparse"
)

// DefaultProcDir is where the kernel exposes pktgen.
const DefaultProcDir = "/proc/net/pktgen"

// DefaultSysNet is where the kernel exposes network devices.
const DefaultSysNet = "/sys/class/net"

// errnoENOTSUPP is the kernel-internal ENOTSUPP (524) pktgen returns for
// clone_skb > 0 or burst > 1 on devices without IFF_TX_SKB_SHARING (tap).
const errnoENOTSUPP = syscall.Errno(524)

// Driver runs pktgen through its /proc interface.
//
// pktgen is per network namespace, and its files disagree on which one:
// thread and device files (kpktgend_N, DEV@N) act on the namespace of the
// /proc file they are opened through, but pgctrl (start, stop, reset) acts
// on the namespace of the WRITING task (pgctrl_write uses
// current->nsproxy->net_ns). So a Driver writing from the default namespace
// against a tap in another namespace configures that namespace's threads
// and then starts nothing. To drive another namespace, set both:
//   - ProcDir to /proc/<pid of a process in it>/net/pktgen (not
//     /proc/net/pktgen: that follows the thread-group leader's namespace,
//     not a thread switched in with setns), and
//   - InNetns to run a write on a thread inside it (every write goes
//     through it, so pgctrl acts on the right namespace).
//
// The zero Driver drives the caller's own namespace.
type Driver struct {
	// ProcDir is the pktgen directory (default /proc/net/pktgen).
	ProcDir string
	// SysNet is the sysfs net class directory (default /sys/class/net),
	// read for the device's carrier.
	SysNet string
	// StopGrace is how long to wait for `start` to return after
	// `pgctrl stop` (default 10s).
	StopGrace time.Duration
	// InNetns, when set, runs fn on a thread inside the target network
	// namespace; every pgctrl, thread and device write goes through it.
	// nil = write from the calling thread.
	InNetns func(fn func() error) error
	// ClearTimeout bounds the wait for the threads to remove their
	// devices (default DefaultClearTimeout).
	ClearTimeout time.Duration
	// Writer delivers each command to its proc file; nil = ProcWriter,
	// the kernel's files. Another Writer stands in for pktgen (a
	// simulation that records the commands and answers like the kernel).
	Writer Writer
	// Counters, when set, reads further counters (the kernel's drops by
	// reason) at the moments the device's tx_dropped is read, so that
	// their growth (Result.Counters) covers the same interval as
	// Result.TxDropped.
	Counters func() (map[string]uint64, error)
}

// Writer writes one pktgen command (with its newline) to the proc file
// at path. pktgen acts on each write(2) as one command, so a Writer
// writes data whole, with one call, and returns the errno pktgen set.
type Writer interface {
	WriteProc(path string, data []byte) error
}

// ProcWriter is the Writer of the kernel's /proc files: one write(2), like
// `echo cmd > file`.
type ProcWriter struct{}

// WriteProc writes data with a single write(2) and returns the bare errno
// of a failed write.
func (ProcWriter) WriteProc(path string, data []byte) error { return writeProc(path, data) }

// ThreadResult is one pktgen thread's device Result.
type ThreadResult struct {
	Thread     int     // kpktgend index
	Device     string  // proc file, e.g. "vnbt0@1"
	OK         bool    // "Result: OK:"
	Msg        string  // the Result line when not OK
	Usec       uint64  // run time in microseconds
	Packets    uint64  // packets sent
	PPS        float64 // packets per second
	BitsPerSec float64 // bits per second
	Errors     uint64  // transmit errors (tap ring full, ...)
	Raw        string  // the whole /proc/net/pktgen/DEV text
	status     string  // perfparse's Result status: ok, idle, running, error
}

// Unfinished reports whether the Result is not a run's end: Idle (its
// kpktgend has not taken the start) or Starting (still running).
func (t ThreadResult) Unfinished() bool { return t.status == "idle" || t.status == "running" }

// Result is a pktgen run.
type Result struct {
	Threads []ThreadResult
	// Stopped says the deadline or ctx ended the run before the count was
	// reached (pgctrl stop); the Results are still pktgen's own.
	Stopped bool
	// Elapsed is the wall time from start to stop.
	Elapsed time.Duration
	// TxDropped is the device's tx_dropped growth from just before the
	// `start` write to the run's end (the threads' whole run and nothing
	// else), when TxDroppedOK; script mode brackets the script.
	TxDropped   uint64
	TxDroppedOK bool
	// Counters is the growth of Driver.Counters over the interval of
	// TxDropped (counters that did not grow are absent); nil with
	// CountersErr when they could not be read, or without Counters.
	Counters    map[string]uint64
	CountersErr error
}

// RunTime is pktgen's own clock of the run: the longest run time of a
// thread that ran (its Result usec). The threads start together, so it
// spans the whole run; 0 when no thread has a Result.
func (r *Result) RunTime() time.Duration {
	var us uint64
	for _, t := range r.Threads {
		if t.OK {
			us = max(us, t.Usec)
		}
	}
	return time.Duration(us) * time.Microsecond
}

// PPS is the sum of the threads' packets per second.
func (r *Result) PPS() float64 {
	var s float64
	for _, t := range r.Threads {
		s += t.PPS
	}
	return s
}

// Packets is the sum of the threads' packets.
func (r *Result) Packets() uint64 {
	var s uint64
	for _, t := range r.Threads {
		s += t.Packets
	}
	return s
}

// Errors is the sum of the threads' errors.
func (r *Result) Errors() uint64 {
	var s uint64
	for _, t := range r.Threads {
		s += t.Errors
	}
	return s
}

// capErrorf is a missing kernel feature or an unusable device: an error
// of class fault.ErrCapability.
func capErrorf(format string, a ...any) error { return fault.Capability("pktgen: "+format, a...) }

func (d *Driver) procDir() string {
	if d.ProcDir != "" {
		return d.ProcDir
	}
	return DefaultProcDir
}

func (d *Driver) sysNet() string {
	if d.SysNet != "" {
		return d.SysNet
	}
	return DefaultSysNet
}

func (d *Driver) write(file, cmd string) error {
	path := filepath.Join(d.procDir(), file)
	var wr Writer = ProcWriter{}
	if d.Writer != nil {
		wr = d.Writer
	}
	do := func() error { return wr.WriteProc(path, []byte(cmd+"\n")) }
	var err error
	if d.InNetns != nil {
		err = d.InNetns(do)
	} else {
		err = do()
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, errnoENOTSUPP) {
		switch {
		case strings.HasPrefix(cmd, "burst "):
			return configErrorf("%s: %q is not supported by this device (pktgen says \"Operation not supported\", errno 524; tap devices lack IFF_TX_SKB_SHARING); use burst: 0", file, cmd)
		case strings.HasPrefix(cmd, "clone_skb "):
			return configErrorf("%s: %q is not supported by this device (errno 524; tap devices lack IFF_TX_SKB_SHARING); use clone_skb: 0 and burst: 0", file, cmd)
		}
	}
	msg := ""
	if b, rerr := os.ReadFile(path); rerr == nil {
		if i := strings.Index(string(b), "Result: "); i >= 0 {
			msg = strings.TrimSpace(strings.SplitN(string(b)[i:], "\n", 2)[0])
		}
	}
	if msg != "" {
		return fmt.Errorf("pktgen: write %q to %s: %w (%s)", cmd, path, err, msg)
	}
	return fmt.Errorf("pktgen: write %q to %s: %w", cmd, path, err)
}

// writeProc writes data with a single write(2), like `echo cmd > file`.
func writeProc(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil {
		var pe *fs.PathError
		if errors.As(werr, &pe) {
			return pe.Err
		}
		return werr
	}
	return cerr
}

// Check returns a *CapabilityError when pktgen is not loaded or dev cannot
// carry traffic (missing, down or NO-CARRIER).
func (d *Driver) Check(dev string) error {
	if _, err := os.Stat(filepath.Join(d.procDir(), "pgctrl")); err != nil {
		return capErrorf("%s/pgctrl not found: the running kernel has no pktgen loaded; run `modprobe pktgen`, or run the scenario in lab mode (a kernel VM) with `kernels:`", d.procDir())
	}
	if dev == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(d.sysNet(), dev, "carrier"))
	if errors.Is(err, fs.ErrNotExist) {
		return capErrorf("device %s does not exist; create the tap first", dev)
	}
	if err != nil {
		// sysfs answers EINVAL for a device that is down.
		return capErrorf("device %s has no carrier state (%v): bring it up (ip link set %s up)", dev, err, dev)
	}
	if strings.TrimSpace(string(b)) != "1" {
		return capErrorf("device %s is NO-CARRIER: nothing is attached to the tap (pktgen would \"succeed\" with 0 packets); start the guest (QEMU) on it first", dev)
	}
	return nil
}

// TxDropped reads dev's tx_dropped counter (SysNet/DEV/statistics);
// ok is false when it cannot.
func (d *Driver) TxDropped(dev string) (uint64, bool) {
	b, err := os.ReadFile(filepath.Join(d.sysNet(), dev, "statistics", "tx_dropped"))
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}

// Reset writes `reset` to pgctrl: stops every thread and removes every
// device. Safe to call more than once (for undo stacks). pktgen acts on it
// asynchronously (see [Driver.Clear]); a run's own setup and teardown use
// Clear.
func (d *Driver) Reset() error { return d.write("pgctrl", "reset") }

// DefaultClearTimeout bounds [Driver.Clear]'s wait for the threads.
const DefaultClearTimeout = 30 * time.Second

// Clear removes every device from every pktgen thread and returns once
// the threads have removed them.
//
// pktgen removes devices asynchronously: `rem_device_all` (and pgctrl
// `reset`, which does it on every thread) only sets a flag on the thread,
// sleeps 125 ms and returns; the kpktgend thread acts on the flag when it
// next runs, and in one pass it handles a start before a removal. A thread
// that has not run since (starved of CPU: TCG, a vhost worker pinned to
// its CPU) still holds the flag when the next run adds its devices, and
// removes them at `start`: the run is void ("open .../vnbt0: no such file
// or directory"). So Clear writes rem_device_all only to the threads that
// list a device, and waits until their files list none: a thread with no
// device gets no flag, and a thread that had one has acted on its flag.
func (d *Driver) Clear(ctx context.Context) error {
	files, err := filepath.Glob(filepath.Join(d.procDir(), "kpktgend_*"))
	if err != nil {
		return err
	}
	var busy []string
	for _, f := range files {
		if _, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(f), "kpktgend_")); err != nil {
			continue // not a thread file
		}
		devs, err := threadDevices(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue // the thread of a CPU gone offline
		}
		if err != nil {
			return err
		}
		if len(devs) == 0 {
			continue
		}
		if err := d.write(filepath.Base(f), "rem_device_all"); err != nil {
			return err
		}
		busy = append(busy, f)
	}
	timeout := d.ClearTimeout
	if timeout <= 0 {
		timeout = DefaultClearTimeout
	}
	deadline := time.Now().Add(timeout)
	for len(busy) > 0 {
		left := busy[:0]
		var devs []string // busy[0]'s, for the error
		for _, f := range busy {
			ds, err := threadDevices(f)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			if len(ds) > 0 {
				if len(left) == 0 {
					devs = ds
				}
				left = append(left, f)
			}
		}
		busy = left
		if len(busy) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pktgen: %s still lists %s %v after rem_device_all: the thread has not run (starved of CPU?); pktgen is left configured", filepath.Base(busy[0]), strings.Join(devs, " "), timeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pktgen: waiting for %s to remove its devices: %w", filepath.Base(busy[0]), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// threadDevices returns the devices the thread file at path lists
// (running and stopped).
func threadDevices(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	k, err := perfparse.ParseKpktgend(f)
	if err != nil {
		return nil, fmt.Errorf("pktgen: %s: %w", filepath.Base(path), err)
	}
	return append(k.Running, k.Stopped...), nil
}

// clearAfter is Clear on a fresh context: the teardown of a run whose own
// context may be done.
func (d *Driver) clearAfter() error { return d.Clear(context.Background()) }

// Session is a started pktgen run.
type Session struct {
	d        *Driver
	plan     *Plan
	started  time.Time
	done     chan struct{} // closed when the `start` write returned
	startErr error
	stopOnce sync.Once
	stopped  bool
	stopErr  error
	issued   chan struct{} // closed right before the `start` write
	quit     chan struct{} // closed by Wait: the window's timer stops
	expired  chan struct{}
	abandon  chan struct{} // closed when Wait returns: stop waiting for the run's end
	// dropped is the tap's tx_dropped growth over the start write
	// (written before done is closed).
	dropped   uint64
	droppedOK bool
	// counted holds Driver.Counters' growth over the same interval
	// (Counters, CountersErr; written before done is closed).
	counted Result
}

// Start checks pktgen and the device, writes the configuration and starts
// the generator (the blocking `start` write runs in its own goroutine).
// On error pktgen is reset.
func (d *Driver) Start(ctx context.Context, c Config) (*Session, error) {
	p, err := NewPlan(c)
	if err != nil {
		return nil, err
	}
	if err := d.Check(p.Config.Dev); err != nil {
		return nil, err
	}
	// Clear, not pgctrl reset: a reset flags every thread, and a thread
	// that acts on it late removes the devices configured next.
	if err := d.Clear(ctx); err != nil {
		return nil, err
	}
	for _, w := range p.Setup {
		if err := ctx.Err(); err != nil {
			return nil, errors.Join(err, d.clearAfter())
		}
		if err := d.write(w.File, w.Cmd); err != nil {
			return nil, errors.Join(err, d.clearAfter())
		}
	}
	s := &Session{d: d, plan: p, done: make(chan struct{}), issued: make(chan struct{}), quit: make(chan struct{}), expired: make(chan struct{}), abandon: make(chan struct{})}
	s.started = time.Now()
	go func() {
		// The tap's drops are read right around the blocking start write:
		// Lost then covers the threads' run, the interval of their pps.
		before, okb := d.TxDropped(p.Config.Dev)
		counters := d.openCounters()
		close(s.issued)
		s.startErr = d.write(p.Start.File, p.Start.Cmd)
		if s.startErr == nil {
			s.awaitRun()
		}
		after, oka := d.TxDropped(p.Config.Dev)
		counters.close(d, &s.counted)
		if okb && oka && after >= before {
			s.dropped, s.droppedOK = after-before, true
		}
		close(s.done)
	}()
	if p.Config.Duration > 0 {
		// The window counts from the start write, not from this
		// goroutine's launch.
		go func() {
			select {
			case <-s.issued:
			case <-s.quit:
				return
			}
			t := time.NewTimer(p.Config.Duration)
			defer t.Stop()
			select {
			case <-t.C:
				close(s.expired)
			case <-s.done:
			case <-s.quit:
			}
		}()
	}
	return s, nil
}

// awaitRun waits until every device's run has ended. pktgen's start sets
// the threads' T_RUN flag, sleeps 125 ms and then waits only while one of
// their devices is running, and a device runs once its kpktgend thread
// has taken the flag: a thread that has not run by then (starved of CPU:
// TCG, a vhost worker pinned to its CPU) starts its devices after the
// write has returned, and they run to their count (or, with count 0,
// until stopped). A signal ends the wait early too. So the run has ended
// when no device's Result is Unfinished; the window's stop ends a late
// run as it ends any other. It stops waiting when Wait gives up.
func (s *Session) awaitRun() {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !s.d.runOver(s.plan.Devices) {
		select {
		case <-tick.C:
		case <-s.abandon:
			return
		}
	}
}

// runOver reports whether no device of devs has an Unfinished Result; a
// device whose file is gone or unreadable counts as over (results says
// what is wrong with it).
func (d *Driver) runOver(devs []Device) bool {
	for _, dev := range devs {
		b, err := os.ReadFile(filepath.Join(d.procDir(), dev.File))
		if err != nil {
			continue
		}
		if tr, err := ParseResult(string(b)); err == nil && tr.Unfinished() {
			return false
		}
	}
	return true
}

// Plan returns the session's plan (defaults filled).
func (s *Session) Plan() *Plan { return s.plan }

// Stop stops the generator now (`pgctrl stop`); the Results are kept.
// The stop is written after the start write was issued: one written
// before it would stop nothing, and the start would then run to its
// count (forever with count 0).
func (s *Session) Stop() error {
	s.stopOnce.Do(func() {
		<-s.issued
		select {
		case <-s.done:
			return
		default:
		}
		s.stopped = true
		s.stopErr = s.d.write("pgctrl", "stop")
	})
	return s.stopErr
}

// Wait waits until pktgen reaches its count, the duration ends or ctx is
// done (both stop pktgen), then reads every thread's Result and resets
// pktgen. A ctx cancel still returns the Results with the ctx error.
func (s *Session) Wait(ctx context.Context) (*Result, error) {
	defer close(s.abandon)
	var ctxErr error
	select {
	case <-s.done:
	case <-s.expired:
	case <-ctx.Done():
		ctxErr = ctx.Err()
	}
	close(s.quit)
	elapsed := time.Since(s.started)
	var errs []error
	select {
	case <-s.done:
	default:
		if err := s.Stop(); err != nil {
			errs = append(errs, err)
		}
		grace := s.d.StopGrace
		if grace <= 0 {
			grace = 10 * time.Second
		}
		// pktgen's threads act on a stop when they next run, and one
		// that takes a stop and a start together handles the stop first:
		// a stop that reached a thread before the start did is lost. So
		// the stop is written again every second until start returns.
		deadline := time.After(grace)
		again := time.NewTicker(time.Second)
		defer again.Stop()
	wait:
		for {
			select {
			case <-s.done:
				break wait
			case <-again.C:
				if err := s.d.write("pgctrl", "stop"); err != nil {
					errs = append(errs, err)
					break wait
				}
			case <-deadline:
				errs = append(errs, fmt.Errorf("pktgen: the run did not end %v after pgctrl stop (a kpktgend thread starved of CPU?)", grace))
				break wait
			}
		}
	}
	select {
	case <-s.done:
		if s.startErr != nil && !s.stopped {
			errs = append(errs, s.startErr)
		}
	default:
	}
	res := &Result{Stopped: s.stopped, Elapsed: elapsed}
	select {
	case <-s.done:
		res.TxDropped, res.TxDroppedOK = s.dropped, s.droppedOK
		res.Counters, res.CountersErr = s.counted.Counters, s.counted.CountersErr
	default:
	}
	var rerrs []error
	res.Threads, rerrs = s.d.results(s.plan.Devices, nil)
	errs = append(errs, rerrs...)
	if err := s.d.clearAfter(); err != nil {
		errs = append(errs, err)
	}
	if ctxErr != nil {
		errs = append([]error{ctxErr}, errs...)
	}
	return res, errors.Join(errs...)
}

// results returns every device's Result: the one in printed (a sample
// script's output) when there, else read from the device's proc file.
func (d *Driver) results(devs []Device, printed map[string]ThreadResult) ([]ThreadResult, []error) {
	var out []ThreadResult
	var errs []error
	for _, dev := range devs {
		tr, ok := printed[dev.File]
		if !ok {
			b, err := os.ReadFile(filepath.Join(d.procDir(), dev.File))
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					// Configured, then gone: its thread acted on a
					// removal it had been asked for before (see Clear).
					err = fault.VoidBecause("a pktgen thread removed its device late", fmt.Errorf("%w: kpktgend_%d removed the device before it ran or before its result was read (a rem_device_all or pgctrl reset the thread acted on late; pktgen handles a start before a removal): the run is void, run it again", err, dev.Thread))
				}
				if printed != nil {
					errs = append(errs, fmt.Errorf("pktgen: %s: no result printed and %w", dev.File, err))
				} else {
					errs = append(errs, fmt.Errorf("pktgen: read result: %w", err))
				}
				continue
			}
			if tr, err = ParseResult(string(b)); err != nil {
				errs = append(errs, fmt.Errorf("pktgen: %s: %w", dev.File, err))
			}
		}
		tr.Thread, tr.Device = dev.Thread, dev.File
		out = append(out, tr)
	}
	return out, errs
}

// Run is Start then Wait.
func (d *Driver) Run(ctx context.Context, c Config) (*Result, error) {
	s, err := d.Start(ctx, c)
	if err != nil {
		return nil, err
	}
	return s.Wait(ctx)
}
