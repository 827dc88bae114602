package runner

import (
	"fmt"
	"path/filepath"

	"github.com/vnetbench/vnetbench/internal/safefs"
)

// A VM whose own kernel fails under TCG (a host guest, or a lab VM of
// runner/lab) is booted again once: there such a failure is most likely
// the emulator's. Both keep the first VM's console (KeepConsole) and, when
// the VM booted again fails too, fail with a TCGRetryError.

// The VM of a TCGRetryError.
const (
	GuestVM = "guest"  // a host guest (the cell ran once more)
	LabVM   = "lab VM" // a lab VM (the lab was booted again)
)

// TCGRetryError is a failure that came twice under TCG: the kernel of the
// first VM (VM: GuestVM or LabVM) failed (First; Why is its fault line,
// clipped), that VM's console was kept as Console (relative to the run
// directory), and the VM booted again in its place failed too (Err, which
// errors.As finds first).
type TCGRetryError struct {
	VM      string
	Why     string
	First   error
	Console string
	Err     error
}

func (e *TCGRetryError) Error() string {
	return fmt.Sprintf("the %s's kernel failed under TCG: %s (its console is kept as %s); booted again once on a fresh %s, which failed too: %v",
		e.VM, e.Why, e.Console, e.VM, e.Err)
}

func (e *TCGRetryError) Unwrap() []error { return []error{e.Err, e.First} }

// KeepConsole moves the console log rel of a VM whose kernel failed to
// kept, both relative to the run directory dir, through safefs (no link
// is followed out of dir): the VM booted again in its place writes a
// console of the same name, and so do later boots of a resumed run. A
// missing console is an error wrapping fs.ErrNotExist.
func KeepConsole(dir, rel, kept string) error {
	if !filepath.IsLocal(rel) || !filepath.IsLocal(kept) {
		return fmt.Errorf("keep the console %s as %s: not in the run directory", rel, kept)
	}
	d, err := safefs.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.MkdirAll(filepath.Dir(kept)); err != nil {
		return fmt.Errorf("keep the console %s: %w", rel, err)
	}
	if err := d.Rename(rel, kept); err != nil {
		return fmt.Errorf("keep the console %s: %w", rel, err)
	}
	return nil
}
