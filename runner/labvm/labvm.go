package labvm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/vmimages"
)

// boot launches the lab VM of qc, follows it until it powers off and
// always stops it; res gets the phases' durations and the inner exit.
func (c *Config) boot(ctx context.Context, qc qemu.Config, res *Result, runDir string) error {
	start := time.Now()
	vm, err := qemu.Start(ctx, nil, c.Exec, qc, qemu.StartOptions{PinVCPUs: c.PinVCPUs})
	if err != nil {
		return &Error{Label: c.Label, Phase: "boot", Err: err, Console: res.Console, Tail: qemu.FileTail(res.Console, 20)}
	}
	defer vm.Close()
	l := &labVM{c: c, to: c.Timeouts.withDefaults(), vm: vm, res: res, start: start,
		f: newFollower(vm.Console(), c.Output, c.Label), turnDir: c.turnDir(runDir)}
	defer l.f.close()
	return l.wait(ctx)
}

// labVM is a running lab VM followed through its phases (boot, setup,
// run, shutdown), each with its deadline.
type labVM struct {
	c        *Config
	to       Timeouts
	vm       *qemu.VM
	f        *follower
	res      *Result
	start    time.Time // QEMU launched
	phase    string
	deadline time.Time
	tInit    time.Time
	tStart   time.Time
	gotExit  bool
	// Labs side by side (Config.Turns): grant is set while the lab is
	// paused, ready to measure, and closed on its turn; granted once it
	// had it. turnDir holds the turn file.
	grant    <-chan struct{}
	granted  bool
	pausedAt time.Time
	turnDir  string
}

// wait follows the console until the VM powers off, the context ends, the
// kernel reports a fault, the run goes silent or a phase overruns.
func (l *labVM) wait(ctx context.Context) error {
	l.phase, l.deadline = "boot", time.Now().Add(l.to.Boot)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := l.poll(); err != nil {
			return err
		}
		select {
		case <-l.vm.Done():
			if err := ctx.Err(); err != nil {
				return l.fail(err) // the interrupt killed QEMU: not a stopped lab
			}
			if err := l.poll(); err != nil {
				return err
			}
			return l.poweredOff()
		case <-ctx.Done():
			return l.fail(ctx.Err())
		case <-l.grant: // nil (never) unless paused for its turn
			if err := ctx.Err(); err != nil {
				return l.fail(err) // granted as the run ended: no turn
			}
			if err := l.resume(); err != nil {
				return err
			}
		case <-tick.C:
		}
		if err := l.check(); err != nil {
			return err
		}
	}
}

// fail is the lab's failure in its current phase.
func (l *labVM) fail(err error) error {
	return &Error{Label: l.c.Label, Phase: l.phase, Err: err, Console: l.res.Console, Tail: qemu.FileTail(l.res.Console, 25)}
}

// poll handles the protocol events the console shows since the last poll.
func (l *labVM) poll() error {
	for _, ev := range l.f.poll() {
		if err := l.handle(ev); err != nil {
			return err
		}
	}
	return nil
}

// handle moves the lab to the phase an event starts and records its
// timing; an "error" event fails the lab.
func (l *labVM) handle(ev vmimages.Event) error {
	switch ev.Ev {
	case vmimages.EvInit:
		l.tInit = time.Now()
		l.res.BootSeconds = l.tInit.Sub(l.start).Seconds()
		l.phase, l.deadline = "setup", time.Now().Add(l.to.Setup)
	case vmimages.EvModules:
		l.res.ModulesMs = ev.StepMS
		l.res.KVM, l.res.NoKVM, l.res.Checked = ev.KVM, ev.NoKVM, ev.Checked
	case vmimages.EvStart:
		l.tStart = time.Now()
		l.res.SetupSeconds = l.tStart.Sub(l.tInit).Seconds()
		l.phase, l.deadline = "run", time.Now().Add(l.to.Run)
	case vmimages.EvExit:
		tExit := time.Now()
		l.gotExit = true
		l.res.ExitCode = ev.Code
		if !l.tStart.IsZero() {
			l.res.RunSeconds = tExit.Sub(l.tStart).Seconds()
		}
		l.phase, l.deadline = "shutdown", time.Now().Add(l.to.Shutdown)
	case vmimages.EvTurn:
		return l.pause()
	case vmimages.EvError:
		return l.fail(errors.New(ev.Msg))
	}
	return nil
}

// poweredOff is the outcome of a lab VM that exited: the inner command's
// exit status, or a failure when the VM never reported it.
func (l *labVM) poweredOff() error {
	l.res.TotalSeconds = time.Since(l.start).Seconds()
	if !l.gotExit {
		// A panic (panic=-1 and -no-reboot) ends QEMU at once, before
		// qemu.FaultGrace: the fault line is the reason.
		if line, _ := l.f.fault(); line != "" {
			return l.faulted(line)
		}
		werr := l.vm.Process().Wait()
		if werr == nil {
			// -no-reboot turns a reset into an exit: a triple fault
			// (seen once under TCG in TCG, nested KVM on emulated SVM)
			// ends the lab VM without a word on its console.
			werr = errors.New("the VM powered off or reset without reporting the inner command's exit (with -no-reboot a reset, such as a triple fault, ends QEMU and prints nothing; finished samples are kept, --resume runs the rest)")
		}
		return l.fail(stopped{fmt.Errorf("qemu exited: %w", werr)})
	}
	if l.res.ExitCode != 0 {
		return &InnerError{Label: l.c.Label, Code: l.res.ExitCode, Tail: qemu.FileTail(l.res.Console, 25)}
	}
	return nil
}

// check fails a lab whose kernel reported a fault qemu.FaultGrace ago,
// whose run has been silent for its Timeouts.Silence, or whose phase
// overran; a lab paused for its turn is neither silent nor late.
func (l *labVM) check() error {
	// A kernel that reports a lockup, stall, oops or panic on the console
	// fails the lab after qemu.FaultGrace (the report's stack traces reach
	// the log meanwhile): it will not finish the run, and waiting for the
	// run's deadline would hold the host for up to an hour.
	if line, at := l.f.fault(); line != "" && time.Since(at) >= qemu.FaultGrace {
		return l.faulted(line)
	}
	if l.grant != nil {
		return nil // paused for its turn: silent, and its clock stands still
	}
	if b := silentBoot(l.to); l.phase == "boot" && b > 0 && time.Since(l.f.seen) > b {
		return l.fail(stopped{fmt.Errorf("the lab VM's console has been silent for %v of its boot (its kernel reaches /init within seconds and /init prints at once): it hung before /init", time.Since(l.f.seen).Round(time.Second))})
	}
	if l.phase == "run" && time.Since(l.f.seen) > l.to.Silence {
		return l.fail(stopped{fmt.Errorf("the lab has been silent for %v (no heartbeat, which its /init prints every %v): its kernel stopped", time.Since(l.f.seen).Round(time.Second), Heartbeat)})
	}
	if time.Now().After(l.deadline) {
		limit := map[string]time.Duration{"boot": l.to.Boot, "setup": l.to.Setup, "run": l.to.Run, "shutdown": l.to.Shutdown}[l.phase]
		return l.fail(fmt.Errorf("timeout after %v (%s)", limit, timeoutHint(l.phase)))
	}
	return nil
}

// silentBoot is how long a lab VM's boot may print nothing before it is
// taken for hung (0 = only the boot timeout bounds it): a third of the
// boot timeout, at least twice Timeouts.Silence, when that is shorter
// than the timeout. A lab kernel (loglevel=4, PVH entry) prints nothing
// until /init, which lab boots reach in seconds; once under TCG one
// printed nothing for its whole 9 min (CI, 2026-12-04). Failing it as
// ErrStopped lets runner/lab boot it again once under TCG (retryReason).
func silentBoot(to Timeouts) time.Duration {
	b := max(to.Boot/3, 2*to.Silence)
	if b >= to.Boot {
		return 0
	}
	return b
}

// faulted is the lab's failure by its kernel's fault line.
func (l *labVM) faulted(line string) error {
	return &Error{Label: l.c.Label, Phase: l.phase, Console: l.res.Console, Tail: qemu.FaultTail(l.res.Console, line, 40),
		Err: &qemu.FaultError{VM: "lab " + l.c.Label, Line: line}}
}

// ErrStopped is in the cause of a lab whose VM stopped without a fault
// line on its console: its console went silent while the run went on,
// or QEMU exited without the inner command's exit (a reset, a triple
// fault). Like a fault, it is the lab kernel's (or under TCG the
// emulator's) doing, not the run's.
var ErrStopped = errors.New("the lab VM stopped")

// stopped marks err as the lab VM having stopped (ErrStopped); its
// message is err's.
type stopped struct{ err error }

func (s stopped) Error() string   { return s.err.Error() }
func (s stopped) Unwrap() []error { return []error{s.err, ErrStopped} }
