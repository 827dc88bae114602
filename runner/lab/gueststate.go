package lab

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/vmimages"
)

// Guest states between labs (runner.GuestStates): the run inside a lab
// reads them from the cache's GuestStateDir, shared read-only like the
// rest of the cache, and saves the state of a guest it booted under its
// own run directory, the only place it may write. Once the lab is done
// the host moves those into the cache, where the next lab's run finds
// them: a lab-pktgen run boots its nested guest once, not once per lab.

// keptStates is how many saved guest states the cache keeps (the newest):
// each is the guest's memory in use, ~100-150 MB for the built-ins'.
const keptStates = 4

// stateName is a state's file name: the key the run inside gives it (runner's guestStateKey).
var stateName = lazyre.New(`^[0-9a-f]{32}$`)

// guestStatesEnv is the inner run's environment entry that points it at
// the cache's saved states.
func guestStatesEnv() string {
	return runner.GuestStatesEnv + "=" + filepath.Join(vmimages.CacheDir(), runner.GuestStateDir)
}

// keepGuestStates copies the guest states the run in inner saved into
// cache's GuestStateDir, removes inner's GuestStateDir (the run inside
// made it: nothing else is there) and keeps the newest keptStates states
// in the cache. Links are neither followed nor copied. It returns the
// keys it copied.
func keepGuestStates(inner, cache string) ([]string, error) {
	in, err := safefs.Open(inner)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer in.Close()
	entries, err := in.ReadDir(runner.GuestStateDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	out, err := safefs.MkdirAll(filepath.Join(cache, runner.GuestStateDir))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	var kept []string
	for _, e := range entries {
		if !e.Type().IsRegular() || !stateName().MatchString(e.Name()) {
			continue
		}
		// Replaced whole: a state of the same key in the cache (one
		// the run could not start its guest from) stays until the new
		// one is complete, and no copy cut short is left for the next
		// lab to load.
		if err := safefs.Copy(out, e.Name(), in, filepath.Join(runner.GuestStateDir, e.Name()), 0o644, safefs.CopyReplace); err != nil {
			return kept, err
		}
		kept = append(kept, e.Name())
	}
	// The inner run's guest-states directory, a name vnetbench writes
	// in its own run directory, its states now copied; a link there is
	// removed, not followed, and one on the way refused.
	if err := safefs.RemoveOwn(in, runner.GuestStateDir); err != nil {
		return kept, err
	}
	return kept, pruneStates(out, keptStates)
}

// pruneStates removes all but the newest keep states in d.
func pruneStates(d *safefs.Dir, keep int) error {
	entries, err := d.ReadDir(".")
	if err != nil {
		return err
	}
	type state struct {
		name string
		mod  int64
	}
	var states []state
	for _, e := range entries {
		if !e.Type().IsRegular() || !stateName().MatchString(e.Name()) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		states = append(states, state{e.Name(), fi.ModTime().UnixNano()})
	}
	slices.SortFunc(states, func(a, b state) int { return cmp.Compare(b.mod, a.mod) })
	var errs []error
	for _, s := range states[min(keep, len(states)):] {
		if err := d.RemoveAll(s.name); err != nil {
			errs = append(errs, fmt.Errorf("remove old guest state: %w", err))
		}
	}
	return errors.Join(errs...)
}
