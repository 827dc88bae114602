package qemu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/ledger"
	"github.com/vnetbench/vnetbench/internal/proc"
)

// VM is a running QEMU: a host guest, a lab VM or a lab's nested guest.
// Start boots it; Console follows its console, Agent connects to its
// agent, Close stops it.
type VM struct {
	Config Config
	Netns  string
	Accel  Accel
	// Launched is when QEMU was started: the VM's age for its console's
	// fault watch (Console).
	Launched time.Time
	proc     proc.Process
	qmp      *QMP
	// clock is when the kernel of a VM started from a saved state
	// (Config.Incoming) had its clock at 0 and its first console line's
	// stamp, once a console watch found them (ConsoleWatch.clockZero).
	clock atomic.Pointer[restoreClock]
}

// Launch starts QEMU for c through ex (inside network namespace netns when
// not empty), waits for its QMP socket and negotiates QMP. It refuses
// vhost=on without /dev/vhost-net, and a vsock CID CheckVsock rejects,
// before starting anything. On any error
// the QEMU it started is killed and waited for.
func Launch(ctx context.Context, ex proc.Executor, c Config, netns string) (*VM, error) {
	if c.QMPSocket == "" {
		return nil, errors.New("qemu: config has no QMP socket")
	}
	if err := CheckVhost(c); err != nil {
		return nil, err
	}
	if err := CheckVsock(c); err != nil {
		return nil, err
	}
	for _, s := range []string{c.QMPSocket, c.AgentSocket} {
		if s != "" {
			os.Remove(s)
		}
	}
	it, err := ledger.Record(ledger.Entry{Kind: ledger.VM, Name: c.Name, Netns: netns})
	if err != nil {
		return nil, err
	}
	launched := time.Now()
	p, err := ex.Start(ctx, proc.Cmd{Argv: Args(c), Netns: netns})
	if err != nil {
		it.Gone()
		return nil, fmt.Errorf("start qemu: %w", err)
	}
	start, _ := ledger.StartTime(p.Pid())
	it.Made(func(e *ledger.Entry) { e.PID, e.Start = p.Pid(), start })
	go func() { <-p.Done(); it.Gone() }()
	vm := &VM{Config: c, Netns: netns, Accel: c.Accel, Launched: launched, proc: p}
	if vm.Accel == "" {
		vm.Accel = TCG
	}
	if err := vm.connectQMP(ctx); err != nil {
		vm.Kill()
		return nil, vm.BootError("connect qmp", err)
	}
	return vm, nil
}

// qmpWait bounds the wait for QEMU's QMP monitor to answer. QEMU answers
// only after loading the kernel: a nested QEMU in a loaded TCG lab VM,
// reading a 50 MB vmlinux over 9p, took over 20 s.
var qmpWait = 2 * time.Minute

func (vm *VM) connectQMP(ctx context.Context) error {
	deadline := time.Now().Add(qmpWait)
	for {
		q, err := DialQMP(ctx, vm.Config.QMPSocket)
		if err == nil {
			vm.qmp = q
			return nil
		}
		select {
		case <-vm.proc.Done():
			if ctx.Err() != nil {
				return ctx.Err() // the interrupt killed it
			}
			if werr := vm.proc.Wait(); werr != nil {
				return fmt.Errorf("qemu exited: %w", werr)
			}
			return errors.New("qemu exited before its QMP socket appeared")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no QMP answer after %v: %w", qmpWait, err)
		}
	}
}

// Pid is QEMU's process id.
func (vm *VM) Pid() int { return vm.proc.Pid() }

// Process is QEMU's process handle.
func (vm *VM) Process() proc.Process { return vm.proc }

// QMP is the VM's QMP client.
func (vm *VM) QMP() *QMP { return vm.qmp }

// Done is closed when QEMU has exited.
func (vm *VM) Done() <-chan struct{} { return vm.proc.Done() }

// VCPUThreads returns the host thread ids of the vCPUs, in vCPU order.
func (vm *VM) VCPUThreads(ctx context.Context) ([]int, error) {
	cpus, err := vm.qmp.CPUs(ctx)
	if err != nil {
		return nil, err
	}
	tids := make([]int, len(cpus))
	for i, c := range cpus {
		tids[i] = c.ThreadID
	}
	return tids, nil
}

// CheckAccel confirms over QMP (query-kvm) that QEMU runs the accelerator
// it was started with (CheckAccel).
func (vm *VM) CheckAccel(ctx context.Context) error {
	st, err := vm.qmp.KVM(ctx)
	if err != nil {
		return err
	}
	return CheckAccel(vm.Accel, st)
}

// Agent connects to the agent's virtio-serial port (its unix socket,
// Config.AgentSocket), retrying until ctx ends while QEMU has not made
// the socket yet. The connection carries the agent protocol (vmimages),
// which this package does not speak.
func (vm *VM) Agent(ctx context.Context) (net.Conn, error) {
	path := vm.Config.AgentSocket
	if path == "" {
		return nil, errors.New("qemu: VM has no agent socket")
	}
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "unix", path)
		if err == nil {
			return conn, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to agent socket %s: %w (last error: %v)", path, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Console follows the VM's console log from its start: a ConsoleWatch
// that takes a kernel report stamped later than the VM has existed
// (since Launched) for a clock jump, not a fault. A VM started from a
// saved state (Config.Incoming) has existed as long as its kernel's
// clock says at its first console line: the clock goes on from the
// state's. The caller closes it.
func (vm *VM) Console() *ConsoleWatch {
	w := newConsoleWatch(vm.Config.ConsoleLog, vm.Launched)
	if vm.Config.Incoming {
		w.clock = &vm.clock
	}
	return w
}

// ConsoleTail returns the last n lines of the console log.
func (vm *VM) ConsoleTail(n int) string { return FileTail(vm.Config.ConsoleLog, n) }

// BootError is a VM that did not come up: which phase, why, and the last
// console lines.
type BootError struct {
	VM      string
	Phase   string
	Err     error
	Console string
}

func (e *BootError) Error() string {
	msg := fmt.Sprintf("boot %s: %s: %v", e.VM, e.Phase, e.Err)
	if e.Console != "" {
		msg += " (last console lines: " + strings.ReplaceAll(e.Console, "\n", " | ") + ")"
	} else {
		msg += " (console is empty)"
	}
	return msg
}

func (e *BootError) Unwrap() error { return e.Err }

// BootError wraps err as a *BootError carrying the console tail (and
// the kernel's panic line when it scrolled out of the tail).
func (vm *VM) BootError(phase string, err error) error {
	tail := vm.ConsoleTail(8)
	if p := panicLine(vm.Config.ConsoleLog); p != "" && !strings.Contains(tail, p) {
		tail = p + "\n...\n" + tail
	}
	return &BootError{VM: vm.Config.Name, Phase: phase, Err: err, Console: tail}
}

// panicLine returns the first "Kernel panic" line of a console log.
func panicLine(path string) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	i := bytes.Index(b, []byte("Kernel panic"))
	if i < 0 {
		return ""
	}
	if j := bytes.LastIndexByte(b[:i], '\n'); j >= 0 {
		b = b[j+1:]
	} else {
		b = b[i:]
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return strings.TrimRight(string(line), "\r ")
}

// Quit asks QEMU to exit over QMP and waits up to grace, then kills it;
// ctx's end kills it at once (a teardown's deadline). It returns nil once
// QEMU is gone. Close is Quit with StopGrace and a deadline of its own.
func (vm *VM) Quit(ctx context.Context, grace time.Duration) error {
	select {
	case <-vm.proc.Done():
		vm.closeQMP()
		return nil
	default:
	}
	if vm.qmp != nil {
		qctx, cancel := context.WithTimeout(ctx, grace)
		_ = vm.qmp.Quit(qctx)
		cancel()
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-vm.proc.Done():
	case <-t.C:
		vm.Kill()
	case <-ctx.Done():
		vm.Kill()
	}
	vm.closeQMP()
	return nil
}

// StopGrace is how long a VM has to quit over QMP before it is killed
// (Close; Quit's grace in a teardown): host guests and lab VMs alike.
const StopGrace = 5 * time.Second

// ExitState says what became of QEMU: exited with status 0 (the guest
// powered off, or rebooted under -no-reboot: a kernel panic with
// panic=-1), exited otherwise (its error carries its stderr's last
// lines), or still running.
func (vm *VM) ExitState() string {
	select {
	case <-vm.proc.Done():
	default:
		return "QEMU is still running"
	}
	if werr := vm.proc.Wait(); werr != nil {
		return "QEMU exited: " + werr.Error()
	}
	s := "QEMU exited with status 0 (the guest powered off, or rebooted: a kernel panic)"
	if _, stderr := vm.proc.Output(); strings.TrimSpace(stderr) != "" {
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		s += "; its stderr: " + strings.Join(lines[max(len(lines)-5, 0):], " | ")
	}
	return s
}

// Kill kills QEMU's process group and waits for it.
func (vm *VM) Kill() {
	_ = vm.proc.Signal(syscall.SIGKILL)
	<-vm.proc.Done()
	vm.closeQMP()
}

func (vm *VM) closeQMP() {
	if vm.qmp != nil {
		vm.qmp.Close()
	}
	for _, s := range []string{vm.Config.QMPSocket, vm.Config.AgentSocket} {
		if s != "" {
			os.Remove(s)
		}
	}
}

// Threads lists the threads of pid with their names (/proc/PID/task).
func Threads(pid int) ([]proc.Thread, error) { return proc.Host.Threads(pid) }

// VhostWorkers are the vhost worker threads serving one QEMU.
type VhostWorkers struct {
	TIDs []int
	// InProcess says they are threads of QEMU's process (Linux 6.4 and
	// later: vhost_task), which perf -p QEMU counts; otherwise they are
	// kernel threads (before 6.4, or a kernel whose vhost runs kthreads
	// again), which perf -p QEMU does not count.
	InProcess bool
}

// Kind names where the workers live, for results: "in-process" or
// "kthread" ("" when there are none).
func (w VhostWorkers) Kind() string {
	switch {
	case len(w.TIDs) == 0:
		return ""
	case w.InProcess:
		return "in-process"
	}
	return "kthread"
}

// FindVhostWorkers returns the vhost workers serving QEMU pid, read from
// fs: threads of QEMU named vhost-TID (TID: the QEMU thread that set the
// vhost device's owner, normally its main thread), else kernel threads
// named vhost-TID for one of QEMU's threads. Every vhost device has one
// worker: one per vhost-net queue pair, one for a vhost-vsock device.
func FindVhostWorkers(fs proc.FS, pid int) VhostWorkers {
	ts, err := fs.Threads(pid)
	if err != nil {
		return VhostWorkers{}
	}
	owners := map[string]bool{}
	var w VhostWorkers
	for _, t := range ts {
		owners["vhost-"+strconv.Itoa(t.TID)] = true
	}
	for _, t := range ts {
		if strings.HasPrefix(t.Name, "vhost-") && owners[t.Name] {
			w.TIDs = append(w.TIDs, t.TID)
		}
	}
	if len(w.TIDs) > 0 {
		w.InProcess = true
		return w
	}
	for _, k := range fs.KernelThreads(func(comm string) bool { return owners[comm] }) {
		w.TIDs = append(w.TIDs, k.PID)
	}
	return w
}

// VhostThreads returns the vhost worker threads serving QEMU pid on this
// machine (FindVhostWorkers).
func VhostThreads(pid int) []int { return FindVhostWorkers(proc.Host, pid).TIDs }
