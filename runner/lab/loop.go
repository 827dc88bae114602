package lab

import (
	"context"
	"errors"
	"fmt"
	"github.com/vnetbench/vnetbench/runner"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// Run runs cells that test kernels other than the running one: for
// each kernel label, a lab VM (runner/labvm) boots that kernel and runs
// `vnetbench run SCENARIO --inside-lab LABEL` on the same cells; the inner
// samples are then appended to the outer run under the label, with the
// inner environment in env.json's kernels. Labels whose samples are all
// in the run already are skipped (--resume).
func Run(ctx context.Context, cells []scenarios.Cell, o runner.Options, in Inner) (*runner.Summary, error) {
	if err := runner.CheckRunDir(o.Dir, o.Resume); err != nil {
		return nil, err
	}
	if err := runner.CheckScripts(cells); err != nil {
		return nil, err
	}
	if err := checkKernels(ctx, cells); err != nil {
		return nil, err
	}
	kernels, err := resolveKernels(ctx, cells, in, o)
	if err != nil {
		return nil, err
	}
	if o.LockPath == "" {
		o.LockPath = runner.DefaultLockPath
	}
	lock, err := runner.AcquireLockWait(ctx, o.LockPath, o.LockWait)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	// The accelerator of every lab cell is checked before anything else:
	// guest.accel: kvm where a lab VM here cannot give its guests KVM is
	// refused at once.
	host := thisHost(o)
	if o.Accel == "" {
		if _, _, err := labAccels(cells, host.KVM); err != nil {
			return nil, err
		}
	}
	// Kernels from source are built first, all of them: a patch that does
	// not apply or a build that fails ends the run before it has a
	// directory.
	cells, builds, bwarn, err := kernels.build(ctx, cells, o)
	if err != nil {
		return nil, err
	}
	if o.Started != nil {
		o.Started()
	}
	lr, err := newLabRun(ctx, o, in, host, builds, bwarn)
	if err != nil {
		return nil, err
	}
	defer lr.w.Close()
	lr.replace = kernels.replace
	return lr.runKernels(ctx, cells)
}

// labRun is Run once the run directory is open: the outer run's
// writer, summary and progress.
type labRun struct {
	o           runner.Options
	in          Inner
	host        Host
	abs         string // the run directory, absolute
	w           *results.Writer
	sum         *runner.Summary
	total, done int
	// replace are, by label, the rebuilt modules its lab loads in place
	// of the packaged ones.
	replace map[string][]string
	// mu guards all of labRun (the writer, the summary, the progress,
	// env.json) while labs side by side run: held except while a lab VM
	// runs (bootLab).
	mu sync.Mutex
	// turns, with labs side by side, is their measuring order (nil: one
	// lab at a time); fatal the first error that ends the run.
	turns *turns
	fatal error
}

// newLabRun opens (or, with Resume, reopens) the run directory, records
// the kernel builds and the scenario copy the labs read.
func newLabRun(ctx context.Context, o runner.Options, in Inner, host Host, builds map[string]*results.KernelBuild, bwarn []string) (*labRun, error) {
	if o.Exec == nil {
		o.Exec = proc.Real{}
	}
	if in.Boot == nil {
		in.Boot = labvm.Run
	}
	// The inner run gets an absolute -o: it runs with the run directory
	// (at the same path) as its working directory, where a relative path
	// would be taken twice.
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	lr := &labRun{o: o, in: in, host: host, abs: abs, sum: &runner.Summary{Dir: o.Dir, Warnings: bwarn}}
	if o.Resume {
		lr.w, err = results.Open(o.Dir)
	} else {
		lr.w, err = o.CreateDir(o.NewEnv(ctx, ""))
	}
	if err != nil {
		return nil, err
	}
	if err := recordBuilds(o.Dir, builds); err != nil {
		lr.w.Close()
		return nil, err
	}
	if err := writeBuildScript(o.Dir, in.Labels, builds); err != nil {
		lr.w.Close()
		return nil, err
	}
	if in.ScenarioData != nil {
		if lr.in.Scenario, err = writeLabScenario(o.Dir, in.ScenarioData); err != nil {
			lr.w.Close()
			return nil, err
		}
	}
	return lr, nil
}

// runKernels runs one lab VM per kernel label, skipping labels whose
// samples the run holds; a kernel whose lab failed is recorded and the
// others still run (a Error at the end). Labs boot side by side and
// measure in turn (runSideBySide) when the host holds more than one,
// else one after the other in label order.
func (lr *labRun) runKernels(ctx context.Context, cells []scenarios.Cell) (*runner.Summary, error) {
	labels, byLabel := scenarios.ByKernel(cells, lr.in.Labels)
	lr.total = len(cells)
	lr.mu.Lock()
	defer lr.mu.Unlock()
	labProgress(lr.o, runner.Progress{Total: lr.total, Started: true})
	var failed []error // labs that failed; the others still run
	var err error
	if n := lr.sideBySide(labels, byLabel); n > 1 {
		failed, err = lr.runSideBySide(ctx, labels, byLabel, n)
	} else {
		failed, err = lr.runInOrder(ctx, labels, byLabel)
	}
	if err != nil {
		return lr.sum, err
	}
	if env, err := results.ReadEnv(lr.o.Dir); err == nil {
		lr.sum.Warnings = append(lr.sum.Warnings, EnvDifferences(env.Kernels)...)
	}
	if len(failed) > 0 {
		return lr.sum, &Error{Failed: failed, Of: len(labels)}
	}
	return lr.sum, nil
}

// runInOrder runs the labs of labels one after the other (lr.mu held).
func (lr *labRun) runInOrder(ctx context.Context, labels []string, byLabel map[string][]scenarios.Cell) (failed []error, err error) {
	for _, label := range labels {
		lc := byLabel[label]
		if lr.skipDone(label, lc) == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return failed, interrupted(label, err)
		}
		lerr, err := lr.runKernel(ctx, label, lc)
		if err != nil {
			return failed, err
		}
		if lerr != nil {
			failed = append(failed, lerr)
		}
	}
	return failed, nil
}

func interrupted(label string, err error) error {
	return fmt.Errorf("interrupted before kernel %s (finished samples are kept; continue with --resume): %w", label, err)
}

// runSideBySide runs the labs of labels with samples to run, n at once,
// measuring one at a time (turns); lr.mu is held, and released while lab
// VMs run. The first error that ends the run stops the other labs (their
// VMs are killed) and is returned.
func (lr *labRun) runSideBySide(ctx context.Context, all []string, byLabel map[string][]scenarios.Cell, n int) (failed []error, err error) {
	var labels []string
	for _, label := range all {
		if lr.skipDone(label, byLabel[label]) > 0 {
			labels = append(labels, label)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lr.turns = newTurns(ctx.Done(), labels, n)
	if lr.o.Log != nil {
		lr.o.Log = &lockedWriter{w: lr.o.Log}
	}
	labLogf(lr.o, "%d lab VMs boot side by side (kernels %s) and measure in turn, one at a time: no lab works beside a measuring one",
		min(n, len(labels)), strings.Join(labels, ", "))
	lerrs := make([]error, len(labels))
	var wg sync.WaitGroup
	lr.mu.Unlock()
	for i, label := range labels {
		wg.Go(func() {
			if err := lr.turns.enter(ctx, label); err != nil {
				lr.mu.Lock()
				lr.firstErr(interrupted(label, err), cancel)
				lr.mu.Unlock()
				return
			}
			defer lr.turns.set(label, gone)
			lr.mu.Lock()
			defer lr.mu.Unlock()
			lerr, kerr := lr.runKernel(ctx, label, byLabel[label])
			lerrs[i] = lerr
			lr.firstErr(kerr, cancel)
		})
	}
	wg.Wait()
	lr.mu.Lock()
	for _, lerr := range lerrs {
		if lerr != nil {
			failed = append(failed, lerr)
		}
	}
	return failed, lr.fatal
}

// firstErr keeps the first error that ends the run and stops the other
// labs (lr.mu held).
func (lr *labRun) firstErr(err error, cancel func()) {
	if err != nil && lr.fatal == nil {
		lr.fatal = err
		cancel()
	}
}

// sideBySide is how many labs of the run run at once: Inner.SideBySide,
// else PlanSideBySide of the labels with samples to run (each with all
// its cells, as its lab VM is sized). Two or more labs that do not fit
// side by side are logged as running one after the other.
func (lr *labRun) sideBySide(labels []string, byLabel map[string][]scenarios.Cell) int {
	var cells []scenarios.Cell
	var todo []string // labels with samples to run
	for _, label := range labels {
		lc := byLabel[label]
		if slices.ContainsFunc(lc, func(c scenarios.Cell) bool { return !lr.w.Done(c.Name, label, c.Rep) }) {
			cells = append(cells, lc...)
			todo = append(todo, label)
		}
	}
	if lr.in.SideBySide > 0 {
		return min(lr.in.SideBySide, len(todo))
	}
	n := PlanSideBySide(cells, lr.host)
	if n == 1 && len(todo) > 1 {
		labLogf(lr.o, "%d lab VMs run one after the other (kernels %s): side by side, their vCPUs must fit in this host's %d CPUs and their memory in 3/4 of its %d MiB",
			len(todo), strings.Join(todo, ", "), len(lr.host.CPUs), lr.host.MemMiB)
	}
	return n
}

// skipDone counts label's samples the run already holds as skipped steps
// of the progress and returns how many are left to run.
func (lr *labRun) skipDone(label string, lc []scenarios.Cell) (todo int) {
	for i := range lc {
		if !lr.w.Done(lc[i].Name, label, lc[i].Rep) {
			todo++
			continue
		}
		lr.done++
		lr.sum.Skipped++
		labProgress(lr.o, runner.Progress{Done: lr.done, Total: lr.total, Cell: lc[i].Name, Kernel: label, Rep: lc[i].Rep, Skipped: true})
	}
	return todo
}

// runKernel boots the lab VM of label, runs its cells inside and imports
// what the inner run finished; under TCG a lab VM whose own kernel failed
// is booted again once (bootAgain). lerr is a lab that failed on its own
// (its unfinished cells recorded as failed); err ends the whole run.
func (lr *labRun) runKernel(ctx context.Context, label string, lc []scenarios.Cell) (lerr, err error) {
	o := lr.o
	accel, lerr, err := lr.bootLab(ctx, label, lc, "")
	if err != nil {
		return nil, err
	}
	if why := retryReason(lerr, accel); why != "" && ctx.Err() == nil {
		if lerr, err = lr.bootAgain(ctx, label, lc, lerr, why); err != nil {
			return nil, err
		}
	}
	if lerr != nil && (ctx.Err() != nil || !kernelFailed(lerr)) {
		labProgress(o, runner.Progress{Done: lr.done, Total: lr.total, Cell: "lab " + label, Kernel: label})
		return nil, lerr
	}
	if lerr == nil {
		return nil, nil
	}
	// This kernel's lab failed (its kernel stuck or crashed, a deadline,
	// the run inside failed): its unfinished cells are recorded as
	// failed, the other kernels still run.
	labLogf(o, "kernel %s: %v", label, lerr)
	recorded, ferr := recordLabFailure(lr.w, o.Dir, label, lc, lerr)
	for _, c := range recorded { // each a step of the progress, failed
		lr.done++
		labProgress(o, runner.Progress{Done: lr.done, Total: lr.total, Cell: c.Name, Kernel: label, Rep: c.Rep, Failed: lerr})
	}
	if ferr != nil {
		return nil, errors.Join(lerr, ferr)
	}
	return lerr, nil
}

// bootLab boots one lab VM of label and imports what its inner run
// finished (the samples get note among their warnings when it is set). It
// returns the lab VM's accelerator and its failure (lerr); err ends the
// whole run.
func (lr *labRun) bootLab(ctx context.Context, label string, lc []scenarios.Cell, note string) (accel qemu.Accel, lerr, err error) {
	o := lr.o
	inner, args := InnerArgs(lr.abs, label, o.Seed, lr.in)
	labLogf(o, "kernel %s: booting a lab VM (%s)", label, kernelDesc(lc[0].Kernel))
	lcfg, lwarn, err := labConfig(label, lc, o, lr.in, args, lr.host)
	if err != nil {
		return "", nil, err
	}
	lr.warn(lwarn...)
	lcfg.Replace = lr.replace[label]
	if lr.turns != nil {
		lcfg.Turns = lr.turns
	}
	lr.mu.Unlock() // labs side by side: the others import, log and boot meanwhile
	res, lerr := lr.in.Boot(ctx, lcfg)
	if lr.turns != nil {
		lr.turns.set(label, working)
	}
	lr.mu.Lock()
	accel = lcfg.Accel
	if res != nil && res.Accel != "" {
		accel = res.Accel
	}
	// Import whatever the inner run finished, also after a failure;
	// each imported sample is one step of the progress.
	imported, ierr := importLab(lr.w, lr.abs, inner, label, res, note)
	lr.sum.Samples += len(imported)
	for i := range imported {
		lr.done++
		s := &imported[i]
		labProgress(o, runner.Progress{Done: lr.done, Total: lr.total, Cell: s.Cell, Kernel: label, Rep: s.Rep, Sample: s})
	}
	if kept, err := keepGuestStates(inner, vmimages.CacheDir()); err != nil {
		labLogf(o, "kernel %s: its guest's saved state not kept: %v", label, err)
	} else if len(kept) > 0 {
		labLogf(o, "kernel %s: its guest's saved state kept for the next lab (%s)", label, strings.Join(kept, ", "))
	}
	if res != nil && res.Accel == qemu.KVM && res.KVM == "" && res.NoKVM != "" {
		lr.warn(fmt.Sprintf("kernel %s: the lab VM runs under KVM but its nested guests under TCG: %s", label, res.NoKVM))
	}
	if ierr != nil {
		return accel, nil, errors.Join(lerr, ierr)
	}
	return accel, lerr, nil
}

// warn adds warnings to the run's summary, each once (a lab booted again
// repeats its first boot's).
func (lr *labRun) warn(ws ...string) {
	for _, w := range ws {
		if !slices.Contains(lr.sum.Warnings, w) {
			lr.sum.Warnings = append(lr.sum.Warnings, w)
		}
	}
}
