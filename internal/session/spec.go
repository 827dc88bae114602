package session

import (
	"slices"
	"strconv"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/scenarios"
)

// Spec names a scenario and the changes a command line makes to it.
type Spec struct {
	// Name is a built-in scenario's name or a scenario file.
	Name string
	// Dir, when set, is the directory of the original scenario file, for
	// its relative paths: Name is a copy (the run inside a lab VM).
	Dir string
	// Sets override scenario keys, in order (--set KEY=VALUE).
	Sets []scenarios.Set
	// Kernels replace the scenario's kernels, the table's columns (none:
	// the scenario's). Their paths are absolute.
	Kernels []scenarios.Kernel
	// Label names the running kernel's column ("" = the scenario's).
	Label string
}

// Load reads the scenario with the overrides, kernels and label applied.
func (sp Spec) Load() (*scenarios.Scenario, error) {
	return sp.load(nil)
}

// load is Load with extra overrides after sp's.
func (sp Spec) load(extra []scenarios.Set) (*scenarios.Scenario, error) {
	sets := append(slices.Clone(sp.Sets), extra...)
	var s *scenarios.Scenario
	var err error
	if sp.Dir != "" {
		s, err = scenarios.LoadFileFrom(sp.Name, sp.Dir, sets...)
	} else {
		s, err = scenarios.Resolve(sp.Name, sets...)
	}
	if err != nil {
		return nil, err
	}
	if err := s.SetKernels(sp.Kernels); err != nil {
		return nil, err
	}
	if err := ApplyLabel(s, sp.Label); err != nil {
		return s, err
	}
	// per_patch (run --per-patch): the kernels become the base and one
	// column per prefix of the series, after --kernel replaced them.
	return s, s.ExpandPerPatch()
}

// KernelArgs are sp's kernels as --kernel arguments again.
func (sp Spec) KernelArgs() []string {
	var out []string
	for _, k := range sp.Kernels {
		out = append(out, "--kernel", k.Spec())
	}
	return out
}

// SetArgs are sp's overrides as --set arguments again.
func (sp Spec) SetArgs() []string {
	var out []string
	for _, st := range sp.Sets {
		out = append(out, "--set", st.String())
	}
	return out
}

// Argv is `vnetbench run` of sp with seed, as argv: what env.json
// records as the command that makes the run again.
func (sp Spec) Argv(seed int64) []string {
	return append(sp.runArgv(nil), "--seed", strconv.FormatInt(seed, 10))
}

// Command is `vnetbench run` of sp with extra overrides (an extra
// override replaces a given one of the same key), shell-quoted: the
// shorter forms plan and doctor suggest. Without extra it is Argv
// without the seed.
func (sp Spec) Command(extra []scenarios.Set) string {
	return proc.Quote(sp.runArgv(extra))
}

// runArgv is `vnetbench run` of sp with extra overrides, the one argv
// Argv and Command both build on.
func (sp Spec) runArgv(extra []scenarios.Set) []string {
	argv := []string{"vnetbench", "run", sp.Name}
	argv = append(argv, sp.KernelArgs()...)
	if sp.Label != "" {
		argv = append(argv, "--label", sp.Label)
	}
	for _, st := range sp.Sets {
		if !slices.ContainsFunc(extra, func(x scenarios.Set) bool { return x.Key == st.Key }) {
			argv = append(argv, "--set", st.String())
		}
	}
	for _, st := range extra {
		argv = append(argv, "--set", st.String())
	}
	return argv
}

// ApplyLabel names the running kernel label (--label NAME): the
// scenario's (or --kernel's) kernel that is the running one takes the
// label, so a bare-metal A/B across a reboot gives each boot its own
// column. A scenario whose kernels all boot in lab VMs is bad input.
func ApplyLabel(s *scenarios.Scenario, label string) error {
	if label == "" {
		return nil
	}
	if msg := scenarios.CheckLabel(label); msg != "" {
		return fault.Input("--label: %s", msg)
	}
	ks := append([]scenarios.Kernel(nil), s.Kernels...)
	n := 0
	for i := range ks {
		if ks[i].Running() {
			ks[i].Label = label
			n++
		}
	}
	if n == 0 {
		return fault.Input("--label %s names the running kernel, but every kernel of %s boots in a lab VM; label those in the scenario or with --kernel LABEL=SPEC", label, s.Name)
	}
	if err := s.SetKernels(ks); err != nil {
		return fault.Input("--label %s: %v", label, err)
	}
	return nil
}

// KernelLabels are s's kernel labels in its order.
func KernelLabels(s *scenarios.Scenario) []string {
	var out []string
	for _, k := range s.Kernels {
		out = append(out, k.Label)
	}
	return out
}

// kernelName is a cell's kernel as samples name it ("host": the running
// kernel without a label).
func kernelName(c *scenarios.Cell) string {
	if c.Kernel.Label != "" {
		return c.Kernel.Label
	}
	return "host"
}
