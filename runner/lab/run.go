package lab

import (
	"context"
	"errors"
	"fmt"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/runner"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// Inner says how the run inside a lab VM finds its scenario, and what
// boots the lab VMs and builds their kernels.
type Inner struct {
	// BootGuests boots every lab's nested guests: no lab starts one from
	// the state an earlier lab saved (gueststate.go).
	BootGuests bool
	// Scenario is the scenario argument for the inner `vnetbench run`: a
	// built-in name, or a file path visible inside the lab (the host root
	// is shared read-only, except /tmp; the run directory read-write).
	Scenario string
	// ScenarioData, when set, is a scenario file's content: Run writes
	// it into the run directory (lab/scenario.yaml, which the lab sees)
	// once the run has started, and runs that file inside.
	ScenarioData []byte
	// Args are extra inner arguments (e.g. --shard I/N).
	Args []string
	// Binary is the static vnetbench binary for the lab ("" = this one).
	Binary string
	// Labels are the scenario's kernel labels in its order: the labs run
	// in this order, so the report's columns follow the scenario (stock
	// before patched) whatever the shuffled cell order. Labels not listed
	// run after, in cell order.
	Labels []string
	// SideBySide caps the labs that boot at once, measuring in turn (0 =
	// as many as the host holds: SideBySide; 1 = one after the other).
	SideBySide int
	// Boot runs one lab VM and the inner command in it (nil: labvm.Run, a
	// real VM), as runner.Options.Exec runs programs.
	Boot func(context.Context, labvm.Config) (*labvm.Result, error)
	// Builder builds the kernels that name a source tree (nil =
	// runner/kbuild in the harness cache).
	Builder KernelBuilder
	// FetchSource returns the tree of a kernel's source: (e.g. the
	// version "6.1" of debian:6.1; nil = kbuild.DebianSource into the
	// harness cache's src/).
	FetchSource func(ctx context.Context, version string) (string, error)
}

// Inside turns the cells of one kernel label into cells for the kernel
// that is now running (the run inside a lab VM): other labels are dropped.
func Inside(cells []scenarios.Cell, label string) []scenarios.Cell {
	var out []scenarios.Cell
	for _, c := range cells {
		if c.Kernel.Label == label {
			c.Kernel = scenarios.Kernel{Label: label}
			out = append(out, c)
		}
	}
	return out
}

// InnerArgs is the command line of the run inside the lab VM of label
// and its run directory: dir is the outer run directory, absolute (the
// inner vnetbench runs with the run directory as its working directory,
// where a relative path would be taken twice). An inner run directory
// that holds results already is resumed.
func InnerArgs(dir, label string, seed int64, in Inner) (inner string, args []string) {
	inner = filepath.Join(dir, results.LabDir(label))
	args = []string{"run", in.Scenario, "--inside-lab", label, "-o", inner, "--seed", strconv.FormatInt(seed, 10)}
	if _, err := os.Stat(filepath.Join(inner, results.ResultsFile)); err == nil {
		args = append(args, "--resume")
	}
	return inner, append(args, in.Args...)
}

// labNestedKVM says whether a lab VM gave its nested guests KVM: the
// vendor module it loaded, "no: REASON", or "" under TCG.
func labNestedKVM(res *labvm.Result) string {
	switch {
	case res.KVM != "":
		return res.KVM
	case res.NoKVM != "":
		return "no: " + res.NoKVM
	}
	return ""
}

// Error ends a lab run in which some kernels' labs failed; the other
// kernels' cells ran. It is a measured failure (exit code 1).
type Error struct {
	// Failed holds one error per failed kernel: its lab's *labvm.Error
	// or *labvm.InnerError, or, when its lab VM's kernel failed under TCG
	// and the lab booted again failed too, a *runner.TCGRetryError
	// (VM runner.LabVM) wrapping both (errors.As finds the second lab's
	// error first).
	Failed []error
	Of     int // kernels in the run
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d of %d kernels failed (their unfinished cells are recorded as failed in results.jsonl; the other kernels ran):\n%v",
		len(e.Failed), e.Of, errors.Join(e.Failed...))
}

func (e *Error) Unwrap() []error { return e.Failed }

// kernelFailed reports whether a lab error is the kernel's lab failing
// (the VM, or the run inside with a measured failure) rather than bad
// input, which ends the whole run.
func kernelFailed(err error) bool {
	var le *labvm.Error
	var ie *labvm.InnerError
	switch {
	case errors.As(err, &le):
		return true
	case errors.As(err, &ie):
		return ie.Code != 2 // 2: bad input or a missing capability inside
	}
	return false
}

// recordLabFailure appends a failed sample for every cell of label that
// the run does not hold yet: the lab's error (with its console tail) in
// Error, the lab console among its artifacts. It returns those cells.
func recordLabFailure(w *results.Writer, dir, label string, cells []scenarios.Cell, lerr error) ([]scenarios.Cell, error) {
	run := ""
	if env, err := results.ReadEnv(dir); err == nil {
		run = env.Run
	}
	var out []scenarios.Cell
	for i := range cells {
		c := &cells[i]
		if w.Done(c.Name, label, c.Rep) {
			continue
		}
		s := results.Sample{Run: run, Cell: c.Name, Rep: c.Rep, Kernel: label, Axes: c.Axes, Start: time.Now().UTC(),
			Metrics: map[metric.Key]float64{}, Error: lerr.Error(), Labels: map[string]string{"lab": label}}
		var le *labvm.Error
		if errors.As(lerr, &le) {
			s.Labels["phase"] = "lab " + le.Phase
		}
		s.Artifacts = labConsoles(dir, label, lerr)
		if err := w.Append(s); err != nil {
			return out, err
		}
		out = append(out, *c)
	}
	return out, nil
}

// labConfig is the lab VM of one kernel label: its kernel, the cells'
// boot deadline, and the guest kernels the inner run needs fetched on the
// host first (the lab VM has no network).
func labConfig(label string, lc []scenarios.Cell, o runner.Options, in Inner, args []string, h Host) (labvm.Config, []string, error) {
	k := lc[0].Kernel
	to := labvm.Timeouts{Run: labRunTimeout(lc)}
	if b := lc[0].Timeouts.Boot; b > 0 {
		to.Boot = b
	}
	size, err := SizeFor(lc, h.CPUs, h.MemMiB)
	if err != nil {
		return labvm.Config{}, nil, fmt.Errorf("kernel %s: %w", label, err)
	}
	warnings := size.Warnings
	c := labvm.Config{Label: label, Kernel: labvm.Kernel{Image: k.Image, Modules: k.Modules, Debian: k.Debian},
		RunDir: o.Dir, OutDir: filepath.Join(o.Dir, results.LabDir(label)), Args: args, Binary: in.Binary, Output: o.Log, Timeouts: to, Prefetch: labPrefetch(lc),
		Shares: labShares(lc), Modules: labModules(), Exec: o.Exec,
		CPUs: size.CPUs, MemoryMiB: size.MemoryMiB, PinVCPUs: size.Pin, Accel: o.Accel,
		DropReasons: slices.ContainsFunc(lc, func(c scenarios.Cell) bool { return c.DropReasons })}
	if !in.BootGuests {
		c.Env = append(c.Env, guestStatesEnv())
	}
	if c.Accel == "" {
		c.Accel = h.KVM.Accel()
	}
	if c.Accel == qemu.KVM && h.KVM.NestedOn() {
		c.Nested = h.KVM.Flag
	}
	// The inner run raises the boot deadline of guests nested under TCG
	// (NestedBoot); the lab's own deadline counts the raised one.
	raised, _ := NestedBoot(lc, c.Nested != "")
	c.Timeouts.Run = labRunTimeout(raised)
	if o.Accel == "" {
		aw, need, err := labAccels(lc, h.KVM)
		if err != nil {
			return labvm.Config{}, nil, err
		}
		warnings = append(warnings, aw...)
		c.NeedKVM = need[label]
	}
	for i, w := range warnings {
		warnings[i] = "kernel " + label + ": " + w
	}
	return c, warnings, nil
}

// Host is what sizing a lab VM and choosing its accelerator need to
// know about the host.
type Host struct {
	KVM    qemu.KVMStatus
	CPUs   []int // the CPUs the harness may run on (its affinity), in order
	MemMiB int   // MemTotal (0 = unknown)
	// Look finds what run's preflight would refuse of the running
	// kernel's cells, cheaply (runner.LookHost; nil: plan and run
	// --dry-run predict nothing, as for a described host).
	Look func(runner.Needs) runner.Facts
}

// thisHost describes this machine (o.KVM, when set, is its KVM).
func thisHost(o runner.Options) Host {
	h := Host{MemMiB: memTotalMiB()}
	if o.KVM != nil {
		h.KVM = *o.KVM
	} else {
		h.KVM = qemu.ProbeKVM()
	}
	if cpus, err := runner.Affinity(0); err == nil {
		h.CPUs = cpus
	}
	return h
}

// memTotalMiB is /proc/meminfo's MemTotal in MiB (0 when unreadable).
func memTotalMiB() int {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			kib, _ := strconv.Atoi(f[1])
			return kib / 1024
		}
	}
	return 0
}

// labModules are the modules a lab VM loads: labvm.LabModules and those of
// every registered workload (workload.LabModules: pktgen, vhost_vsock,
// ...), so a lab kernel has what any workload's cells need.
func labModules() []string {
	out := slices.Clone(labvm.LabModules)
	for _, m := range workload.LabModules() {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// labRunMargin is added to a lab's run deadline for what no cell timeout
// covers: the inner run's start (environment, image build), perf report
// after each window, and its end.
const labRunMargin = 5 * time.Minute

// labRunTimeout is the deadline of the run inside a lab: the sum of its
// cells' own deadlines (timeouts.cell: boot + setup + traffic + teardown,
// plus a second setup for the window's closing counters), each repetition
// counted, plus labRunMargin. A stuck kernel is caught long before it
// (console faults within seconds, a silent guest within 30 s); this bound
// only keeps a lab from running forever.
func labRunTimeout(cells []scenarios.Cell) time.Duration {
	d := labRunMargin
	for i := range cells {
		d += runner.CellDeadline(&cells[i])
	}
	return d
}

// labShares are the host directories the cells need inside the lab that
// its host root share may hide (a tmpfs over /root, /home, /tmp, ...): the
// workloads' Needs.Shares (the kernel trees of pktgen script mode) and the
// directories of a guest kernel given by path (guest.kernel's image and
// modules). The lab skips those under its run or cache directory, which
// it shares anyway.
func labShares(cells []scenarios.Cell) []string {
	var out []string
	add := func(d string) {
		if d == "" || slices.ContainsFunc(out, func(o string) bool { return d == o || strings.HasPrefix(d, o+"/") }) {
			return // shared already, or within a share
		}
		out = append(out, d)
	}
	for _, c := range cells {
		if g := c.Guest.Kernel; g.Image != "" {
			add(filepath.Dir(g.Image))
			add(g.Modules)
		}
		if c.Generator.Config == nil {
			continue
		}
		for _, d := range c.Generator.Config.Needs().Shares {
			add(d)
		}
	}
	return out
}

// labPrefetch lists the nested guests' Debian kernels of cells, once each.
// A guest without a kernel gets, inside the lab, the lab kernel's
// /boot/vmlinuz-RELEASE from the shared host root when the host has it
// installed, else vmimages' default Debian kernel (newest cached
// DefaultDebianFlavour): that one is prefetched unless the lab kernel is
// itself a /boot image of the host. Guest images given as paths are
// visible in the lab as they are.
func labPrefetch(cells []scenarios.Cell) []labvm.Kernel {
	var out []labvm.Kernel
	seen := map[string]bool{}
	add := func(v string) {
		if !seen[v] {
			seen[v] = true
			out = append(out, labvm.Kernel{Debian: v})
		}
	}
	for _, c := range cells {
		g := c.Guest.Kernel
		switch {
		case g.Debian != "":
			add(g.Debian)
		case g.Image != "":
		case !strings.HasPrefix(c.Kernel.Image, "/boot/vmlinuz-"):
			add(vmimages.DefaultDebianFlavour)
		}
	}
	return out
}

// EnvDifferences warns when the environments of compared kernels differ
// in more than the kernel (CPU, CPU count, accelerator, tool versions,
// governor, SMT).
func EnvDifferences(envs map[string]*results.Env) []string {
	labels := slices.Sorted(maps.Keys(envs))
	if len(labels) < 2 {
		return nil
	}
	base := envs[labels[0]]
	var out []string
	for _, l := range labels[1:] {
		e := envs[l]
		if e == nil || base == nil {
			continue
		}
		var diffs []string
		cmp := func(what, a, b string) {
			if a != b {
				diffs = append(diffs, fmt.Sprintf("%s %q vs %q", what, a, b))
			}
		}
		cmp("cpu", base.CPUModel, e.CPUModel)
		cmp("cpus", strconv.Itoa(base.CPUs), strconv.Itoa(e.CPUs))
		cmp("accel", base.Accel, e.Accel)
		cmp("qemu", base.QEMUVersion, e.QEMUVersion)
		cmp("perf", base.PerfVersion, e.PerfVersion)
		cmp("governor", base.Governor, e.Governor)
		cmp("smt", base.SMT, e.SMT)
		if len(diffs) > 0 {
			out = append(out, fmt.Sprintf("kernels %s and %s were measured in environments that differ in more than the kernel: %s",
				labels[0], l, strings.Join(diffs, ", ")))
		}
	}
	return out
}

func labLogf(o runner.Options, format string, a ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", a...)
	}
}

func labProgress(o runner.Options, p runner.Progress) {
	if o.Progress != nil {
		o.Progress(p)
	}
}

func kernelDesc(k scenarios.Kernel) string {
	switch {
	case k.Debian != "":
		return "Debian " + k.Debian
	case k.Source != "":
		return "built from " + k.Source + ": " + k.Image
	case k.Tree != "":
		return "built from " + k.Tree + ": " + k.Image
	}
	return k.Image
}

// writeLabScenario writes a scenario file's copy where a lab VM sees it
// (results.LabScenario in the run directory; the host's /tmp is hidden
// there) and returns its absolute path.
func writeLabScenario(dir string, data []byte) (string, error) {
	p, err := filepath.Abs(filepath.Join(dir, results.LabScenario))
	if err != nil {
		return "", err
	}
	d, err := safefs.Open(dir)
	if err != nil {
		return "", err
	}
	defer d.Close()
	return p, d.WriteFile(results.LabScenario, data, 0o644)
}

// markChecked marks the rebuilt modules the lab found running as built.
func markChecked(b *results.KernelBuild, res *labvm.Result) {
	if res == nil {
		return
	}
	for i := range b.Modules {
		b.Modules[i].Checked = slices.Contains(res.Checked, b.Modules[i].Name)
	}
}

// recordBuilds puts the identity of each kernel built from source into
// env.json, under its label (the lab's own environment joins it there).
func recordBuilds(dir string, builds map[string]*results.KernelBuild) error {
	if len(builds) == 0 {
		return nil
	}
	env, err := results.ReadEnv(dir)
	if err != nil {
		return err
	}
	if env.Kernels == nil {
		env.Kernels = map[string]*results.Env{}
	}
	for l, id := range builds {
		if env.Kernels[l] == nil {
			env.Kernels[l] = &results.Env{}
		}
		env.Kernels[l].Build = id
	}
	return results.WriteEnv(dir, *env)
}

// labArtifacts re-roots a lab sample's artifacts at the outer run (under
// rel, inner's path there), keeping only plain files under inner; the
// others are named in a warning.
func labArtifacts(inner, rel string, arts, warns []string) ([]string, []string) {
	var out []string
	for _, a := range arts {
		fi, err := os.Lstat(filepath.Join(inner, a))
		if !filepath.IsLocal(a) || err != nil || !fi.Mode().IsRegular() || !noLinkBetween(inner, a) {
			warns = append(warns, fmt.Sprintf("artifact %q of the lab is not a plain file in its run directory: not imported", fault.Clip(a)))
			continue
		}
		out = append(out, filepath.Join(rel, a))
	}
	return out, warns
}

// noLinkBetween reports whether no directory on the way from dir to
// dir/rel is a symbolic link.
func noLinkBetween(dir, rel string) bool {
	p := dir
	parts := strings.Split(filepath.Dir(rel), string(filepath.Separator))
	for _, c := range parts {
		if c == "." {
			continue
		}
		p = filepath.Join(p, c)
		if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// importLab appends the inner run's samples under label, artifacts
// re-rooted at the outer run, note (if set) among their warnings, and
// records the inner environment. It returns the samples it appended.
// outer and inner are absolute.
//
// The lab wrote inner: nothing there is followed or trusted as a path.
// results.jsonl and env.json must be plain files (a link is an error), and
// an artifact that is not a plain file under inner (a link, "../..") is
// dropped with a warning in its sample.
func importLab(w *results.Writer, outer, inner, label string, res *labvm.Result, note string) ([]results.Sample, error) {
	if _, err := os.Lstat(filepath.Join(inner, results.ResultsFile)); err != nil {
		return nil, nil
	}
	for _, name := range []string{results.ResultsFile, results.EnvFile} {
		if fi, err := os.Lstat(filepath.Join(inner, name)); err == nil && !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("lab %s: %s is not a plain file (a %v); the lab's results are not imported", label, filepath.Join(inner, name), fi.Mode().Type())
		}
	}
	set, err := results.Load(inner)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(outer, inner)
	if err != nil {
		return nil, err
	}
	var out []results.Sample
	for _, s := range set.Samples {
		s.Kernel = label
		if w.Done(s.Cell, label, s.Rep) {
			continue
		}
		s.Artifacts, s.Warnings = labArtifacts(inner, rel, s.Artifacts, s.Warnings)
		if note != "" {
			s.Warnings = append(s.Warnings, note)
		}
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels["lab"] = label
		s.Nested = true
		if err := w.Append(s); err != nil {
			return out, err
		}
		out = append(out, s)
	}
	env, err := results.ReadEnv(outer)
	if err == nil {
		ienv, ierr := results.ReadEnv(inner)
		if ierr == nil {
			if env.Kernels == nil {
				env.Kernels = map[string]*results.Env{}
			}
			if res != nil && ienv.Extra != nil {
				ienv.Extra["lab_boot_s"] = strconv.FormatFloat(res.BootSeconds, 'f', 1, 64)
				ienv.Extra["lab_setup_s"] = strconv.FormatFloat(res.SetupSeconds, 'f', 1, 64)
				if nested := labNestedKVM(res); nested != "" {
					ienv.Extra["lab_nested_kvm"] = nested
				}
			}
			if old := env.Kernels[label]; old != nil && old.Build != nil {
				ienv.Build = old.Build
				markChecked(ienv.Build, res)
			}
			if old := env.Kernels[label]; old != nil {
				ienv.LabRetry = old.LabRetry // a lab booted again, of this run or one it resumes
			}
			env.Kernels[label] = ienv
			results.WriteEnv(outer, *env)
		}
	}
	return out, nil
}
