package dropmon

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// EnvVar passes an attached monitor's map to a child process (a lab VM's
// run inside): "fd=3 probe=kprobe:kfree_skb_reason". See Monitor.Env and
// Inherit.
const EnvVar = "VNETBENCH_DROPMON"

// ErrEnvVar carries, instead of EnvVar, why the ancestor could not attach
// the counter (a lab kernel without BPF, say): the child then says so
// rather than attaching one itself (in a lab VM, that would patch the
// kernel's code while its guests run).
const ErrEnvVar = EnvVar + "_ERROR"

// Probe names of the two modes (Monitor.Probe starts with one).
const (
	ProbeKprobe     = "kprobe:"
	ProbeTracepoint = "tracepoint:skb:kfree_skb"
)

// Monitor is an attached drop counter (or one inherited from the process
// that attached it).
type Monitor struct {
	m    *ebpf.Map
	prog *ebpf.Program
	lnk  link.Link
	// Probe is where the program counts: "kprobe:kfree_skb_reason",
	// "kprobe:sk_skb_reason_drop" or ProbeTracepoint.
	Probe string
}

// probe is where to attach.
type probe struct {
	kprobe    bool
	symbol    string
	reasonReg int16
}

func (p probe) String() string {
	if p.kprobe {
		return ProbeKprobe + p.symbol
	}
	return ProbeTracepoint
}

// choose picks the probe for a kernel whose /proc/kallsyms is ksyms:
// a kprobe on the drop function when the kernel has kprobes, else the
// tracepoint. sk_skb_reason_drop(sk, skb, reason) (6.11+) takes the
// reason in the third argument, kfree_skb_reason(skb, reason) in the
// second.
func choose(ksyms io.Reader, haveKprobes bool) probe {
	if !haveKprobes || ksyms == nil {
		return probe{}
	}
	var found probe
	sc := bufio.NewScanner(ksyms)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || (f[1] != "T" && f[1] != "t") {
			continue
		}
		switch f[2] {
		case "sk_skb_reason_drop":
			return probe{kprobe: true, symbol: f[2], reasonReg: regsDX}
		case "kfree_skb_reason":
			found = probe{kprobe: true, symbol: f[2], reasonReg: regsSI}
		}
	}
	return found
}

// Attach loads the counting program and attaches it: a kprobe where the
// kernel has kprobes and its drop function, else the skb:kfree_skb raw
// tracepoint. The kernel patches its code here (see the package doc).
func Attach() (*Monitor, error) {
	_, err := os.Stat("/sys/bus/event_source/devices/kprobe")
	haveKprobes := err == nil
	var p probe
	if f, err := os.Open("/proc/kallsyms"); err == nil {
		p = choose(f, haveKprobes)
		f.Close()
	}
	mon, err := attach(p)
	if err != nil && p.kprobe {
		var terr error
		if mon, terr = attach(probe{}); terr == nil {
			return mon, nil
		}
		err = errors.Join(err, terr)
	}
	return mon, err
}

func attach(p probe) (*Monitor, error) {
	m, err := ebpf.NewMap(mapSpec())
	if err != nil {
		return nil, capErr("create the counting map", err)
	}
	prog, err := ebpf.NewProgram(programSpec(p, m.FD()))
	if err != nil {
		m.Close()
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			// The kernel took the program type and refused the code:
			// a bug here, not a missing capability.
			return nil, fmt.Errorf("drop reasons: the verifier refused the counting program: %w", err)
		}
		return nil, capErr("load the counting program", err)
	}
	var lnk link.Link
	if p.kprobe {
		lnk, err = link.Kprobe(p.symbol, prog, nil)
	} else {
		lnk, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "kfree_skb", Program: prog})
	}
	if err != nil {
		prog.Close()
		m.Close()
		return nil, capErr("attach to "+p.String(), err)
	}
	return &Monitor{m: m, prog: prog, lnk: lnk, Probe: p.String()}, nil
}

func capErr(what string, err error) error {
	return fmt.Errorf("%w: drop reasons: %s: %w", fault.ErrCapability, what, err)
}

// Snapshot reads the map: drops so far by (return address, reason).
func (mon *Monitor) Snapshot() (map[Key]uint64, error) {
	out := map[Key]uint64{}
	var k Key
	var v uint64
	it := mon.m.Iterate()
	for it.Next(&k, &v) {
		out[Key{Addr: k.Addr, Reason: k.Reason}] = v
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("drop reasons: read the counting map: %w", err)
	}
	return out, nil
}

// File returns a duplicate of the map's descriptor for a child process
// (exec.Cmd.ExtraFiles); the caller closes it after the start.
func (mon *Monitor) File() (*os.File, error) {
	fd, err := unix.FcntlInt(uintptr(mon.m.FD()), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, fmt.Errorf("drop reasons: duplicate the map's descriptor: %w", err)
	}
	return os.NewFile(uintptr(fd), "vnb_drops"), nil
}

// Env is the EnvVar value for a child that finds the map at fd.
func (mon *Monitor) Env(fd int) string {
	return fmt.Sprintf("%s=fd=%d probe=%s", EnvVar, fd, mon.Probe)
}

// Inherit opens the monitor an ancestor attached and passed in EnvVar
// (value v). The program stays the ancestor's: Close closes only the map.
func Inherit(v string) (*Monitor, error) {
	mon := &Monitor{}
	fd := -1
	for _, f := range strings.Fields(v) {
		k, val, _ := strings.Cut(f, "=")
		switch k {
		case "fd":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%s: bad fd %q", EnvVar, val)
			}
			fd = n
		case "probe":
			mon.Probe = val
		}
	}
	if fd < 0 || mon.Probe == "" {
		return nil, fmt.Errorf("%s=%q: want \"fd=N probe=NAME\"", EnvVar, v)
	}
	m, err := ebpf.NewMapFromFD(fd)
	if err != nil {
		return nil, fmt.Errorf("%s: map at fd %d: %w", EnvVar, fd, err)
	}
	mon.m = m
	return mon, nil
}

// Close detaches the program (when this process attached it) and closes
// the map. The kernel patches its code again when the last user of the
// probe goes.
func (mon *Monitor) Close() error {
	var errs []error
	if mon.lnk != nil {
		errs = append(errs, mon.lnk.Close())
	}
	if mon.prog != nil {
		errs = append(errs, mon.prog.Close())
	}
	if mon.m != nil {
		errs = append(errs, mon.m.Close())
	}
	return errors.Join(errs...)
}
