package runner

import (
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/results"
)

// envNotes records in a run's env.json what its guests were: kernel
// release, command lines, what they did with saved states. The notes
// are a record, not the run's work: an env.json that cannot be read or
// written is left as it is.
type envNotes struct {
	dir      string // the run directory
	release  string // the guest kernel release noted
	cmdlines []string
}

// cmdline records a guest kernel command line (each distinct one once,
// in boot order).
func (e *envNotes) cmdline(cmdline string) {
	if slices.Contains(e.cmdlines, cmdline) {
		return
	}
	e.cmdlines = append(e.cmdlines, cmdline)
	e.edit(func(env *results.Env) bool {
		env.GuestCmdline = slices.Clone(e.cmdlines)
		return true
	})
}

// kernel records the guest kernel release (once).
func (e *envNotes) kernel(release string) {
	if release == "" || e.release == release {
		return
	}
	e.release = release
	e.edit(func(env *results.Env) bool {
		env.SetExtra("guest_kernel", release)
		return true
	})
}

// state records what a guest did with a saved state (each distinct note
// once, joined by "; ").
func (e *envNotes) state(note string) {
	e.edit(func(env *results.Env) bool {
		old := env.Extra[results.ExtraGuestState]
		if slices.Contains(strings.Split(old, "; "), note) {
			return false
		}
		if old != "" {
			note = old + "; " + note
		}
		env.SetExtra(results.ExtraGuestState, note)
		return true
	})
}

// edit changes env.json with fn, written back when fn reports a change.
func (e *envNotes) edit(fn func(*results.Env) bool) {
	env, err := results.ReadEnv(e.dir)
	if err != nil || !fn(env) {
		return
	}
	results.WriteEnv(e.dir, *env)
}
