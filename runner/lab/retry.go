package lab

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// retryReason says why a lab that failed with lerr, its VM under accel,
// is booted again once ("" = it is not): the lab VM's own kernel
// reported a fault on its console (a qemu.FaultError: a panic, an oops, a
// BUG, a lockup) or the VM stopped (labvm.ErrStopped: silent during the
// run, or gone without the inner command's exit), and the lab ran under
// TCG. There such a failure is most likely the emulator's: a Debian 6.12
// lab kernel once died of "Fatal exception in interrupt" with EFLAGS
// 1fcf1772, bits no x86 CPU sets. Under KVM a lab kernel's fault is a
// finding about that kernel (or the host) and is reported as it is; so
// are a failed inner run, a deadline and an interrupted run.
func retryReason(lerr error, accel qemu.Accel) string {
	var le *labvm.Error
	if accel != qemu.TCG || !errors.As(lerr, &le) {
		return ""
	}
	var fe *qemu.FaultError
	switch {
	case errors.As(le.Err, &fe):
		return fault.Clip(strings.TrimSpace(fe.Line))
	case errors.Is(le.Err, labvm.ErrStopped):
		return fault.Clip(firstLine(le.Err.Error()))
	}
	return ""
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// bootAgain boots the lab of label a second time after its first lab VM
// failed with first (why: retryReason's). The first console is kept as
// results.LabFirstConsole; the inner run resumes (InnerArgs), so the
// samples the first lab finished are kept and not run again, and the
// samples of the second lab say why it ran, and so does env.json
// (recordLabRetry). A second failure fails the
// kernel with both (a runner.TCGRetryError of a runner.LabVM).
func (lr *labRun) bootAgain(ctx context.Context, label string, lc []scenarios.Cell, first error, why string) (lerr, err error) {
	labLogf(lr.o, "kernel %s: %v", label, first)
	kept, err := keepFirstLab(lr.o.Dir, label)
	if err != nil {
		return nil, errors.Join(first, err)
	}
	lr.warn(fmt.Sprintf("kernel %s: its lab VM's kernel failed under TCG (%s), most likely the emulator's fault: the lab was booted again once; the samples it had finished are kept, the rest ran in the second lab VM; the first console is kept as %s",
		label, why, kept))
	labLogf(lr.o, "kernel %s: booting its lab again once (TCG); finished samples are kept", label)
	note := fmt.Sprintf("measured in a second lab VM: the first one's kernel failed under TCG (%s), most likely the emulator's fault; its console is kept as %s", why, kept)
	_, lerr, err = lr.bootLab(ctx, label, lc, note)
	if err != nil {
		return nil, err
	}
	if err := recordLabRetry(lr.o.Dir, label, &results.LabRetry{Why: why, Console: kept}); err != nil {
		return nil, errors.Join(first, err)
	}
	if lerr != nil {
		lerr = &runner.TCGRetryError{VM: runner.LabVM, Why: why, First: first, Console: kept, Err: lerr}
	}
	return lerr, nil
}

// recordLabRetry records in env.json that label's lab VM was booted
// again (results.Env.LabRetry, in the label's Env among Kernels).
func recordLabRetry(dir, label string, r *results.LabRetry) error {
	env, err := results.ReadEnv(dir)
	if err != nil {
		return err
	}
	if env.Kernels == nil {
		env.Kernels = map[string]*results.Env{}
	}
	if env.Kernels[label] == nil {
		env.Kernels[label] = &results.Env{}
	}
	env.Kernels[label].LabRetry = r
	return results.WriteEnv(dir, *env)
}

// keepFirstLab readies the run directory for label's second lab VM: its
// console log (which the next boot empties) is kept as
// results.LabFirstConsole, and an inner run directory without results
// (the lab failed before the inner run created them) is removed, so the
// inner run starts afresh there rather than refusing a directory that is
// not empty. It returns the kept log's path, relative to dir.
func keepFirstLab(dir, label string) (string, error) {
	kept := results.LabFirstConsole(label)
	if err := runner.KeepConsole(dir, results.LabConsole(label), kept); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("lab %s: %w", label, err)
	}
	d, err := safefs.Open(dir)
	if err != nil {
		return "", err
	}
	defer d.Close()
	// The inner run directory is vnetbench's name in its own run
	// directory; without results.jsonl it holds only what the failed
	// lab wrote. A link at it is removed, not followed; one on the way
	// is refused.
	if _, err := d.Lstat(filepath.Join(results.LabDir(label), results.ResultsFile)); errors.Is(err, fs.ErrNotExist) {
		if err := safefs.RemoveOwn(d, results.LabDir(label)); err != nil {
			return "", err
		}
	}
	return kept, nil
}

// labConsoles are the lab console logs of label in dir that a failed
// sample names: console.log, and the first lab VM's when lerr is a lab
// booted again (runner.TCGRetryError).
func labConsoles(dir, label string, lerr error) []string {
	var out []string
	names := []string{results.LabConsole(label)}
	var re *runner.TCGRetryError
	if errors.As(lerr, &re) {
		names = append(names, re.Console)
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			out = append(out, n)
		}
	}
	return out
}
