package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// The run's cells, one sample each in order: a sample the run directory
// holds already is skipped, and a cell's failure runs it again (a void
// measurement, a guest that stopped answering, a guest kernel fault under
// TCG), records it as failed and goes on (a guest fault, failed traffic,
// a second failure), or ends the run (anything else).

// runCells runs a sample of each cell not yet in the run directory and
// returns the errors of the cells whose guest failed (recorded as failed
// samples; the others went on). Any other error stops the run.
func (r *runState) runCells(ctx context.Context, cells []scenarios.Cell, sum *Summary) (faults []error, err error) {
	total := len(cells)
	done := 0
	r.progress(Progress{Total: total, Started: true})
	for i := range cells {
		c := &cells[i]
		if r.w.Done(c.Name, kernelLabel(c), c.Rep) {
			done++
			sum.Skipped++
			r.progress(Progress{Done: done, Total: total, Cell: c.Name, Kernel: kernelLabel(c), Rep: c.Rep, Skipped: true})
			continue
		}
		if err := ctx.Err(); err != nil {
			return faults, fmt.Errorf("interrupted after %d of %d samples (finished ones are kept; continue with --resume): %w", done, total, err)
		}
		if r.ns == nil {
			if err := r.setupRun(ctx); err != nil {
				return faults, fmt.Errorf("%w (%s)", err, LeftoversHint)
			}
			sum.Netns = r.ns.Name
		}
		s, err := r.runSampleRetrying(ctx, c)
		if err != nil {
			if ctx.Err() != nil {
				return faults, fmt.Errorf("interrupted in cell %s rep %d (finished samples are kept; continue with --resume): %w", c.Name, c.Rep+1, ctx.Err())
			}
			if !cellFailed(err) {
				return faults, err
			}
			if aerr := r.recordCellFailure(c, err); aerr != nil {
				return faults, errors.Join(err, aerr)
			}
			faults = append(faults, err)
			done++
			r.progress(Progress{Done: done, Total: total, Cell: c.Name, Kernel: kernelLabel(c), Rep: c.Rep, Failed: err})
			continue
		}
		done++
		sum.Samples++
		r.progress(Progress{Done: done, Total: total, Cell: c.Name, Kernel: kernelLabel(c), Rep: c.Rep, Sample: s})
	}
	return faults, nil
}

func (r *runState) progress(p Progress) {
	if r.opts.Progress != nil {
		r.opts.Progress(p)
	}
}

// kernelLabel is the kernel of c's samples ("host": the running kernel
// without a label).
func kernelLabel(c *scenarios.Cell) string {
	if c.Kernel.Label != "" {
		return c.Kernel.Label
	}
	return "host"
}

// HungCause is the void cause (results.Sample.VoidRerun) of a cell whose
// traffic tool did not finish within timeouts.traffic.
const HungCause = "traffic hung past timeouts.traffic"

// again is why a sample is its cell's second attempt.
type again struct {
	note string // for the sample's warnings
	// voidCause is the first attempt's cause when it was void
	// (results.Sample.VoidRerun), "" otherwise.
	voidCause string
	// fault is the first attempt's guest kernel fault under TCG (nil:
	// none), faultWhy its line (results.Sample.FaultRerun), its guest's
	// console kept as kept (relative to the run directory).
	fault    *qemu.FaultError
	faultWhy string // its fault line, clipped
	kept     string
}

// runSampleRetrying runs a sample of c, once more when the first attempt
// was void, or on a fresh guest when the guest stopped answering or its
// kernel faulted under TCG (againAfter).
func (r *runState) runSampleRetrying(ctx context.Context, c *scenarios.Cell) (*results.Sample, error) {
	s, err := r.runSample(ctx, c, nil)
	if err == nil || ctx.Err() != nil {
		return s, err
	}
	a, err := againAfter(r, c, err)
	if a == nil {
		return nil, err
	}
	s, err = r.runSample(ctx, c, a)
	return s, a.failedAgain(err)
}

// againAfter is why cell c, whose first attempt failed with err, runs once
// more, or nil and the cell's error when it does not.
func againAfter(r *runState, c *scenarios.Cell, err error) (*again, error) {
	switch {
	case allVoid(err):
		// The tool raced with itself (pktgen removing a device late
		// under TCG): nothing was measured, the guest is fine. A tool
		// that hung may have left the guest in any state: the cell
		// runs on a fresh one.
		cause, _ := fault.VoidCause(err)
		if cause == HungCause {
			r.logf("%v: running the cell once more on a fresh guest", err)
			if serr := r.guests.stop(); serr != nil {
				r.logf("stop the guest of the hung traffic: %v", serr)
			}
		} else {
			r.logf("%v: running the cell once more", err)
		}
		return &again{note: results.VoidRerunNote + err.Error(), voidCause: cmp.Or(cause, "void measurement")}, nil
	case errors.Is(err, ErrGuestUnresponsive):
		// A guest that stopped answering without a kernel fault on
		// its console (seen under TCG in TCG on a loaded host) is the
		// harness's trouble, not a measurement: the cell runs once
		// more on a fresh guest, and its sample says so.
		r.logf("%v: retrying the cell once on a fresh guest", err)
		if serr := r.guests.stop(); serr != nil {
			r.logf("stop the silent guest: %v", serr)
		}
		return &again{note: "ran on a fresh guest after the previous one stopped answering: " + err.Error()}, nil
	}
	return tcgFaultAgain(r, c, err)
}

// tcgFaultAgain readies cell c's second attempt after a guest kernel
// fault (err holds the *qemu.FaultError) under TCG, where it is most
// likely the emulator's: a Debian 6.12 kernel once died of "Fatal
// exception in interrupt" with EFLAGS bits no x86 CPU sets. The faulted
// guest is stopped and its console kept (results.FaultConsole). Under KVM
// a guest kernel fault is a finding about the kernel: nil, err.
func tcgFaultAgain(r *runState, c *scenarios.Cell, err error) (*again, error) {
	var fe *qemu.FaultError
	if !errors.As(err, &fe) || r.guests.accelOf(c) != qemu.TCG {
		return nil, err
	}
	why := fault.Clip(strings.TrimSpace(fe.Line))
	r.logf("cell %s rep %d: the guest's kernel faulted under TCG (%s): retrying the cell once on a fresh guest", c.Name, c.Rep+1, why)
	if serr := r.guests.stop(); serr != nil {
		r.logf("stop the faulted guest: %v", serr)
	}
	kept := results.FaultConsole(c.Name, kernelLabel(c), c.Rep)
	if kerr := keepConsole(r.dir, fe.Console, kept); kerr != nil {
		return nil, errors.Join(err, kerr)
	}
	return &again{fault: fe, faultWhy: why, kept: kept,
		note: fmt.Sprintf("%s (%s), most likely the emulator's fault; its console is kept as %s", results.FaultRerunNote, why, kept)}, nil
}

// keepConsole keeps the console log at path, in the run directory dir,
// as kept (KeepConsole).
func keepConsole(dir, path, kept string) error {
	rel, err := filepath.Rel(dir, path)
	if err != nil || !filepath.IsLocal(rel) {
		return fmt.Errorf("keep the faulted guest's console: %q is not in the run directory", path)
	}
	return KeepConsole(dir, rel, kept)
}

// failedAgain is err, the failure of a second attempt (a), naming the
// first attempt's guest kernel fault when that was why it ran.
func (a *again) failedAgain(err error) error {
	ce, ok := err.(*CellError)
	if !ok || a.fault == nil {
		return err
	}
	return &CellError{Cell: ce.Cell, Rep: ce.Rep, Phase: ce.Phase,
		Err: &TCGRetryError{VM: GuestVM, Why: a.faultWhy, First: a.fault, Console: a.kept, Err: ce.Err}}
}

// guestFailed reports whether err is the guest's failure: its kernel is
// stuck or crashed, its agent stopped answering, or its agent connection
// closed.
func guestFailed(err error) bool {
	var fe *qemu.FaultError
	var ge *GuestGoneError
	return errors.As(err, &fe) || errors.As(err, &ge) || errors.Is(err, ErrGuestUnresponsive)
}

// cellFailed reports whether err ends only its cell, not the run: its
// guest faulted or stopped answering, its traffic failed (a tool that
// hung past timeouts.traffic twice, a void measurement run twice), or its
// guest's counters could not be read (the agent's socket broke). Bad
// input and a missing capability (pktgen's "use burst: 0", no pgctrl)
// still end the run: every cell would fail the same way. The cell is
// recorded as failed, the run goes on, and ends with a KernelFaultError.
func cellFailed(err error) bool {
	var ce *CellError
	if errors.Is(err, fault.ErrInput) || errors.Is(err, fault.ErrCapability) {
		return false // the same in every cell: fix it, then --resume
	}
	return guestFailed(err) || errors.As(err, &ce) && (ce.Phase == "traffic" || ce.Phase == "warmup" || ce.Phase == "counters")
}

// recordCellFailure stops the cell's guest (the other cells run on a
// fresh one: a hung tool may have left it in any state) and appends a
// failed sample of c.
func (r *runState) recordCellFailure(c *scenarios.Cell, err error) error {
	r.logf("%v", err)
	if serr := r.guests.stop(); serr != nil {
		r.logf("stop the faulted guest: %v", serr)
	}
	return r.w.Append(failedSample(r.id, r.dir, c, err))
}

// failedSample is the results.jsonl record of a cell that failed: no
// metrics, the error (with the console tail) in Error.
func failedSample(run, dir string, c *scenarios.Cell, err error) results.Sample {
	s := results.Sample{Run: run, Cell: c.Name, Rep: c.Rep, Kernel: kernelLabel(c), Axes: c.Axes,
		Start: time.Now().UTC(), Metrics: map[metric.Key]float64{}, Error: err.Error()}
	var ce *CellError
	if errors.As(err, &ce) {
		s.Labels = map[string]string{"phase": ce.Phase}
	}
	var fe *qemu.FaultError
	var ge *GuestGoneError
	console := ""
	if errors.As(err, &fe) {
		console = fe.Console
	} else if errors.As(err, &ge) {
		console = ge.Console
	}
	if console != "" {
		if rel, rerr := filepath.Rel(dir, console); rerr == nil && !strings.HasPrefix(rel, "..") {
			s.Artifacts = append(s.Artifacts, rel)
		}
	}
	var te *TCGRetryError
	if errors.As(err, &te) {
		s.Artifacts = append(s.Artifacts, te.Console)
	}
	return s
}

// allVoid reports whether every error err joins is a void measurement
// (fault.ErrVoid): one void device among a timeout or a real error is
// not a measurement to repeat.
func allVoid(err error) bool {
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		for _, x := range errs {
			if !allVoid(x) {
				return false
			}
		}
		return len(errs) > 0
	case interface{ Is(error) bool }:
		if e.Is(fault.ErrVoid) {
			return true // this error itself, not one it wraps
		}
	}
	if u := errors.Unwrap(err); u != nil {
		return allVoid(u)
	}
	return false
}
