package kbuild

// The work tree of a build: a copy of the source tree (or a git worktree
// at the ref) per spec, locked while it builds, with the patches applied.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/internal/units"
)

// Git runs git in dir through ex and returns its standard output (its
// error: git's exit and last lines). Callers put --end-of-options before
// any value that comes from a user.
func Git(ctx context.Context, ex proc.Executor, dir string, args ...string) (string, error) {
	out, err := ex.Run(ctx, proc.Cmd{Argv: append([]string{"git", "-C", dir}, args...)})
	return string(out), err
}

// Commit resolves ref to the full hash of a commit of the git tree at
// dir. The ref goes after --end-of-options, so git never reads one from
// a user as an option (--output=FILE would make git write FILE).
func Commit(ctx context.Context, ex proc.Executor, dir, ref string) (string, error) {
	out, err := Git(ctx, ex, dir, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	return strings.TrimSpace(out), err
}

// work is a plan's locked work tree (a git worktree of the tree, or a
// copy of it) with its state directory, and the builder that drives it:
// creating, checking out, configuring it, applying and reverting the
// plan's patches. Both directories, and the copy's temporary one, hold
// safefs.OwnFile saying workOwner from the moment they are made: they are
// removed only with it (an older vnetbench's, without it, is used while it
// builds but never removed; a link at their names is never followed).
type work struct {
	b          *Builder
	p          *Plan
	root       *safefs.Dir // DIR/work
	dir, state string
	lock       *os.File
}

// workOwner is what a work tree's safefs.OwnFile says.
const workOwner = "vnetbench kbuild work tree"

func (w *work) unlock() {
	if w.lock != nil {
		syscall.Flock(int(w.lock.Fd()), syscall.LOCK_UN)
		w.lock.Close()
	}
	w.root.Close()
}

// workRoot opens DIR/work, made when missing; a link at work is refused.
func workRoot(dir string) (*safefs.Dir, error) {
	d, err := safefs.MkdirAll(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Sub("work")
}

// openWork locks the plan's work tree, creating and configuring it when
// needed, and reverts patches an interrupted build left applied.
func (b *Builder) openWork(ctx context.Context, p *Plan) (*work, error) {
	root, err := workRoot(b.Dir)
	if err != nil {
		return nil, err
	}
	w := &work{b: b, p: p, root: root, dir: root.Join(p.workID), state: root.Join(p.workID + ".vnb")}
	lf, err := root.OpenFile(p.workID+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		root.Close()
		return nil, err
	}
	if err := w.wait(ctx, lf); err != nil {
		lf.Close()
		root.Close()
		return nil, err
	}
	w.lock = lf
	if w.ready() {
		err := w.revertAll(ctx)
		if err == nil && p.Git {
			err = w.checkout(ctx)
		}
		if err == nil {
			return w, nil
		}
		b.logf("kernel %s: work tree %s: %v; making it again", p.Spec.Label, w.dir, err)
	}
	if err := w.remove(ctx); err != nil {
		w.unlock()
		return nil, err
	}
	if err := w.create(ctx); err != nil {
		err = errors.Join(err, w.remove(ctx))
		w.unlock()
		return nil, err
	}
	return w, nil
}

// ready reports whether the work tree is ready to build in: its state
// says so, and neither it nor its state is a symbolic link (one planted
// there would take the build's writes elsewhere; create refuses it).
func (w *work) ready() bool {
	for _, n := range []string{w.p.workID, w.p.workID + ".vnb"} {
		if fi, err := w.root.Lstat(n); err != nil || !fi.IsDir() {
			return false
		}
	}
	fi, err := w.root.Lstat(w.p.workID + ".vnb/ready")
	return err == nil && fi.Mode().IsRegular()
}

// wait takes the work tree's lock f, waiting (and saying so) while another
// build holds it, until ctx ends.
func (w *work) wait(ctx context.Context, f *os.File) error {
	b, label, dir := w.b, w.p.Spec.Label, w.dir
	said := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("lock work tree %s: %w", dir, err)
		}
		if !said {
			b.logf("kernel %s: waiting for another build in %s", label, dir)
			said = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kernel %s: waiting for another build in %s: %w", label, dir, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// remove deletes the work tree, its state and a copy's temporary
// directory: each only when its safefs.OwnFile proves it a work tree
// vnetbench made. One that does not is left as it is and named in the
// error, one line (the user removes it).
func (w *work) remove(ctx context.Context) error {
	b, p := w.b, w.p
	var errs []any
	for _, n := range []string{p.workID + ".vnb", p.workID, p.workID + ".tmp"} {
		if err := safefs.RemoveOwnDir(w.root, n, workOwner); err != nil {
			errs = append(errs, err)
		}
	}
	if p.Git {
		b.Exec.Run(context.WithoutCancel(ctx), proc.Cmd{Argv: []string{"git", "-C", p.Tree, "worktree", "prune"}})
	}
	if len(errs) == 0 {
		return nil
	}
	format := "kernel %s: make the work tree anew: " + strings.TrimSuffix(strings.Repeat("%w; ", len(errs)), "; ")
	return fmt.Errorf(format, append([]any{p.Spec.Label}, errs...)...)
}

// create makes the work tree (where remove left nothing) and configures
// it.
func (w *work) create(ctx context.Context) error {
	b, p := w.b, w.p
	start := time.Now()
	if err := safefs.MkdirOwn(w.root, p.workID+".vnb", workOwner); err != nil {
		return err
	}
	if err := w.makeTree(ctx); err != nil {
		return err
	}
	if err := w.root.MkdirAll(p.workID + ".vnb/applied"); err != nil {
		return err
	}
	if err := w.configure(ctx); err != nil {
		return err
	}
	b.logf("kernel %s: work tree ready in %s", p.Spec.Label, time.Since(start).Round(time.Second))
	return os.WriteFile(filepath.Join(w.state, "ready"), nil, 0o644)
}

// makeTree makes the work tree, marked as vnetbench's before anything
// is in it: git worktree add without a checkout, then the checkout; or a
// copy into a new temporary directory, renamed.
func (w *work) makeTree(ctx context.Context) error {
	b, p := w.b, w.p
	if p.Git {
		b.logf("kernel %s: git worktree of %s at %.12s in %s", p.Spec.Label, p.Tree, p.Commit, w.dir)
		if _, err := b.Exec.Run(ctx, proc.Cmd{Argv: []string{"git", "-C", p.Tree, "worktree", "add", "--detach", "--force", "--no-checkout", "--end-of-options", w.dir, p.Commit}}); err != nil {
			return fmt.Errorf("kernel %s: %w", p.Spec.Label, err)
		}
		if err := safefs.MarkOwn(w.root, p.workID, workOwner); err != nil {
			return err
		}
		if _, err := Git(ctx, b.Exec, w.dir, "reset", "-q", "--hard"); err != nil {
			return fmt.Errorf("kernel %s: check out the work tree: %w", p.Spec.Label, err)
		}
		return nil
	}
	b.logf("kernel %s: copying %s (not a git repository) to %s", p.Spec.Label, p.Tree, w.dir)
	tmp := p.workID + ".tmp"
	if err := safefs.MkdirOwn(w.root, tmp, workOwner); err != nil {
		return err
	}
	if _, err := b.Exec.Run(ctx, proc.Cmd{Argv: []string{"cp", "-a", "--", p.Tree + "/.", w.root.Join(tmp)}}); err != nil {
		return fmt.Errorf("kernel %s: copy the tree: %w", p.Spec.Label, err)
	}
	// The tree's own OwnFile, if it has one, came with the copy.
	if err := safefs.MarkOwn(w.root, tmp, workOwner); err != nil {
		return err
	}
	return w.root.Rename(tmp, p.workID)
}

// checkout moves a ready git work tree to the plan's commit, when it is
// at another, and configures it again there (the commits' Kconfig may
// differ). make then recompiles what the checkout changed: git rewrites
// only the files that differ. Those files join the ETA's touched list.
func (w *work) checkout(ctx context.Context) error {
	b, p := w.b, w.p
	head, err := Git(ctx, b.Exec, w.dir, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	if head = strings.TrimSpace(head); head == p.Commit {
		return nil
	}
	changed, err := Git(ctx, b.Exec, w.dir, "diff", "--name-only", "--end-of-options", head, p.Commit)
	if err != nil {
		return err
	}
	b.logf("kernel %s: work tree %s from %.12s to %.12s (%s changed)", p.Spec.Label, w.dir, head, p.Commit, units.Plural(len(strings.Fields(changed)), "file"))
	if _, err := Git(ctx, b.Exec, w.dir, "checkout", "-q", "--detach", p.Commit); err != nil {
		return err
	}
	touched := filepath.Join(w.state, "touched")
	last := readString(touched)
	if err := os.WriteFile(touched, []byte(strings.TrimSpace(last+"\n"+changed)), 0o644); err != nil {
		return err
	}
	return w.configure(ctx)
}

// configure writes the work tree's .config: make allnoconfig with the
// harness's fragment (and the label's), then olddefconfig; it fails when
// the result lost an option of the fragments.
func (w *work) configure(ctx context.Context) error {
	b, p := w.b, w.p
	frag := filepath.Join(w.state, "fragment.config")
	if err := os.WriteFile(frag, []byte(p.Fragment.Text), 0o644); err != nil {
		return err
	}
	b.logf("kernel %s: configuring (make allnoconfig + the harness's fragment%s, then olddefconfig)", p.Spec.Label, orEmpty(p.Spec.Config, " + "+p.Spec.Config))
	log, err := os.Create(filepath.Join(w.state, "config.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cfg := filepath.Join(w.dir, ".config")
	before, berr := os.ReadFile(cfg)
	fi, serr := os.Stat(cfg)
	for _, args := range [][]string{{"allnoconfig", "KCONFIG_ALLCONFIG=" + frag}, {"olddefconfig"}} {
		argv := append([]string{"make", "-C", w.dir}, args...)
		if _, err := b.Exec.Run(ctx, proc.Cmd{Argv: argv, Stdout: log, Stderr: log, Env: Cache(b.Dir).makeEnv()}); err != nil {
			return fmt.Errorf("kernel %s: configure: %w (log %s)", p.Spec.Label, err, log.Name())
		}
	}
	// The same config as before keeps its time: make sees nothing new
	// (no syncconfig pass, nothing rebuilt for it).
	if after, err := os.ReadFile(cfg); berr == nil && serr == nil && err == nil && bytes.Equal(before, after) {
		os.Chtimes(cfg, fi.ModTime(), fi.ModTime())
	}
	return w.checkConfig()
}

// applied is the state file listing the patches applied to a work tree.
func appliedFiles(w *work) []string {
	m, _ := filepath.Glob(filepath.Join(w.state, "applied", "*.patch"))
	sort.Strings(m)
	return m
}

// apply applies the plan's patches in order; on a failure it reverts the
// ones it applied and names the patch and the hunk.
func (w *work) apply(ctx context.Context) error {
	p := w.p
	for i, pt := range p.Patches {
		saved := filepath.Join(w.state, "applied", fmt.Sprintf("%04d.patch", i))
		if err := os.WriteFile(saved, pt.Data, 0o644); err != nil {
			return err
		}
		if _, err := w.gitApply(ctx, saved, false); err != nil {
			os.Remove(saved)
			rerr := w.revertAll(ctx)
			return errors.Join(w.applyError(i, err), rerr)
		}
	}
	return nil
}

// gitApply runs git apply in the work tree. Outside a git worktree git
// must not find a repository above the copy (it would apply the paths
// relative to that one).
func (w *work) gitApply(ctx context.Context, patch string, reverse bool) ([]byte, error) {
	argv := []string{"git", "apply", "--whitespace=nowarn"}
	if reverse {
		argv = append(argv, "-R")
	}
	argv = append(argv, "--end-of-options", patch)
	return w.b.Exec.Run(ctx, proc.Cmd{Argv: argv, Dir: w.dir, Env: []string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(w.dir)}})
}

// revertAll reverts the applied patches, last first.
func (w *work) revertAll(ctx context.Context) error {
	files := appliedFiles(w)
	for i := len(files) - 1; i >= 0; i-- {
		argv := []string{"git", "apply", "--whitespace=nowarn", "-R", "--end-of-options", files[i]}
		if _, err := w.b.Exec.Run(ctx, proc.Cmd{Argv: argv, Dir: w.dir, Env: []string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(w.dir)}}); err != nil {
			return fmt.Errorf("revert %s in %s: %w", files[i], w.dir, err)
		}
		os.Remove(files[i])
	}
	return nil
}

// applyError words a failed git apply: which patch, which file and hunk.
func (w *work) applyError(i int, err error) error {
	p := w.p
	pt := p.Patches[i]
	what := fmt.Sprintf("patch %d/%d %s", i+1, len(p.Patches), pt.Name())
	if pt.Subject != "" {
		what += fmt.Sprintf(" (%q)", pt.Subject)
	}
	base := p.Tree
	if p.Git {
		base = fmt.Sprintf("%s at %.12s", p.Tree, p.Commit)
	}
	msg := ""
	var ee *proc.ExitError
	if errors.As(err, &ee) {
		msg = ee.Tail
	}
	detail := ""
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimSpace(l)
		rest, ok := strings.CutPrefix(l, "error: patch failed: ")
		if !ok {
			continue
		}
		i := strings.LastIndex(rest, ":")
		if i < 0 {
			continue
		}
		file := rest[:i]
		line, _ := strconv.Atoi(rest[i+1:])
		detail = fmt.Sprintf("%s, hunk at line %d", file, line)
		if h := Hunk(pt.Data, file, line); h != "" {
			detail = fmt.Sprintf("%s, hunk %s", file, h)
		}
		break
	}
	if detail == "" {
		for _, l := range strings.Split(msg, "\n") {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, "error: ") {
				detail = strings.TrimPrefix(l, "error: ")
				break
			}
		}
	}
	if detail == "" {
		detail = err.Error()
	}
	return fault.Input("kernel %s: %s does not apply to %s: %s; rebase the patch onto that tree or change ref:", p.Spec.Label, what, base, detail)
}
