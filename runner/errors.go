package runner

import (
	"errors"
	"fmt"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// capErrorf is something this host lacks for a scenario (a tool, a
// device, a kernel feature), found before anything is set up: an error of
// class fault.ErrCapability.
func capErrorf(format string, a ...any) error { return fault.Capability(format, a...) }

// CellError is a cell that failed while running: which cell, repetition
// and phase.
type CellError struct {
	Cell  string
	Rep   int
	Phase string
	Err   error
}

func (e *CellError) Error() string {
	return fmt.Sprintf("cell %s rep %d: %s: %v", e.Cell, e.Rep+1, e.Phase, e.Err)
}

func (e *CellError) Unwrap() error { return e.Err }

// KernelFaultError ends a run in which guest kernels reported faults
// (lockups, stalls, oopses, panics), guests stopped answering or a
// cell's traffic failed (a tool hung past timeouts.traffic): those
// cells were recorded as failed, the others ran on a fresh guest. It is a
// measured failure (exit code 1).
type KernelFaultError struct {
	Failed []error // one *CellError per failed cell
	Of     int     // the run's cells
}

func (e *KernelFaultError) Error() string {
	return fmt.Sprintf("%d of %d cells failed on a guest kernel fault, a guest that stopped answering or their traffic (recorded as failed in results.jsonl; the other cells ran on a fresh guest):\n%v",
		len(e.Failed), e.Of, errors.Join(e.Failed...))
}

func (e *KernelFaultError) Unwrap() []error { return e.Failed }
