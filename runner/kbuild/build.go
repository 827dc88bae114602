package kbuild

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
)

// Spec is a kernel to build: a source tree, optionally a git ref, patches
// on top and a config fragment.
type Spec struct {
	// Label names the kernel in messages (stock, patched, ...).
	Label string
	// Tree is the top of a Linux source tree: a git repository (built at
	// Ref in a git worktree) or a plain directory (built in a copy).
	Tree string
	// Ref is a git ref or commit ("" = HEAD); git trees only.
	Ref string
	// Patches are patch files, mboxes or globs, applied in order.
	Patches []string
	// Config is a config fragment applied after BaseConfig ("" = none).
	Config string
}

// Kernel is a built kernel in the cache.
type Kernel struct {
	Image   string // bzImage
	Modules string // lib/modules/RELEASE (modules.builtin at least)
	// Identity is what the run records about it.
	Identity results.KernelBuild
	// Cached: found in the cache, nothing was built.
	Cached bool
	// Log is the build log ("" when cached and the log is gone).
	Log string
	// Compiled counts the files this build compiled (0 when cached).
	Compiled int
}

// Builder builds kernels into its cache directory:
//
//	DIR/out/KEY/        a finished build: bzImage, lib/modules/RELEASE/,
//	                    config, build.json (identity); written to a
//	                    temporary directory first and renamed, so a failed
//	                    or interrupted build leaves no entry
//	DIR/work/ID/        the work tree of one (tree, commit, config): a git
//	                    worktree or a copy; kernels of the same tree and
//	                    config (stock, patched) share it, so the patched
//	                    build recompiles only what the patches touch
//	DIR/work/ID.vnb/    its state: the config fragment, applied patches
//	DIR/logs/KEY.log    build logs, kept
//	DIR/ccache/         ccache's cache (when ccache is installed)
//
// KEY hashes the tree (commit, or a plain tree's file names, sizes and
// times), the patches, the config fragment and the compiler.
type Builder struct {
	Dir  string
	Jobs int // make -j (default: the CPU count)
	// Exec runs git, cp and make (default proc.Real{}).
	Exec proc.Executor
	// Log receives progress lines (nil = none).
	Log io.Writer
	// Every is how often progress is logged while make runs (default 20s).
	Every time.Duration

	noDeps bool // tests: skip the host dependency check
	// treeHashes remembers plain trees' fingerprints (a walk of ~75,000
	// files per kernel otherwise; stock and patched share a tree).
	treeHashes map[string]string
}

// Plan is a resolved Spec: what would be built and under which key.
type Plan struct {
	Spec     Spec
	Tree     string // absolute
	Git      bool
	Commit   string
	TreeHash string
	Patches  []Patch
	Fragment *Fragment
	FragSHA  string
	Compiler string
	Key      string
	workID   string
}

// Cached returns the plan's kernel when the cache holds it.
func (b *Builder) Cached(p *Plan) (*Kernel, bool) {
	k, err := b.load(filepath.Join(b.Dir, "out", p.Key))
	if err != nil {
		return nil, false
	}
	k.Cached = true
	return k, true
}

// BuildAll resolves every spec and builds them (BuildPlans).
func (b *Builder) BuildAll(ctx context.Context, specs []Spec) ([]*Kernel, error) {
	plans := make([]*Plan, len(specs))
	for i, s := range specs {
		p, err := b.Resolve(ctx, s)
		if err != nil {
			return nil, err
		}
		plans[i] = p
	}
	return b.BuildPlans(ctx, plans)
}

// BuildPlans checks that every patch applies before anything is built,
// then builds the kernels not in the cache, in order. The kernels come back
// in the order of plans.
func (b *Builder) BuildPlans(ctx context.Context, plans []*Plan) ([]*Kernel, error) {
	b.defaults()
	var todo []*Plan
	for _, p := range plans {
		if _, ok := b.Cached(p); !ok {
			todo = append(todo, p)
		}
	}
	if len(todo) > 0 {
		if err := b.checkDeps(); err != nil {
			return nil, err
		}
		for _, p := range todo {
			if len(p.Patches) > 0 {
				if err := b.Check(ctx, p); err != nil {
					return nil, err
				}
			}
		}
	}
	out := make([]*Kernel, len(plans))
	for i, p := range plans {
		k, err := b.Build(ctx, p)
		if err != nil {
			return nil, err
		}
		out[i] = k
	}
	return out, nil
}

func (b *Builder) defaults() {
	if b.Jobs <= 0 {
		b.Jobs = runtime.NumCPU()
	}
	if b.Exec == nil {
		b.Exec = proc.Real{}
	}
	if b.Every <= 0 {
		b.Every = 20 * time.Second
	}
}

func (b *Builder) checkDeps() error {
	if b.noDeps {
		return nil
	}
	return CheckDeps()
}

func (b *Builder) logf(format string, a ...any) {
	if b.Log != nil {
		fmt.Fprintf(b.Log, format+"\n", a...)
	}
}

// Resolve checks a spec without building: the tree is a kernel tree, the
// ref exists, the patches and the config fragment can be read. It computes
// the build's cache key.
func (b *Builder) Resolve(ctx context.Context, s Spec) (*Plan, error) {
	b.defaults()
	if s.Tree == "" {
		return nil, fault.Input("kernel %s: no tree; set tree: to a kernel source directory", s.Label)
	}
	tree, err := filepath.Abs(s.Tree)
	if err != nil {
		return nil, err
	}
	if err := checkKernelTree(tree); err != nil {
		return nil, fault.Input("kernel %s: %w", s.Label, err)
	}
	p := &Plan{Spec: s, Tree: tree}
	top, gerr := b.gitOut(ctx, tree, "rev-parse", "--show-toplevel")
	if gerr == nil && samePath(strings.TrimSpace(top), tree) {
		p.Git = true
		ref := s.Ref
		if ref == "" {
			ref = "HEAD"
		}
		c, err := b.gitOut(ctx, tree, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
		if err != nil {
			return nil, fault.Input("kernel %s: ref %q is not a commit in %s; check it with git -C %s log %s (or fetch it first)", s.Label, ref, tree, tree, ref)
		}
		p.Commit = strings.TrimSpace(c)
	} else {
		if s.Ref != "" {
			return nil, fault.Input("kernel %s: ref %q given, but %s is not a git repository (its top); drop ref: or point tree: at a git clone", s.Label, s.Ref, tree)
		}
		if p.TreeHash = b.treeHashes[tree]; p.TreeHash == "" {
			if p.TreeHash, err = hashTree(tree); err != nil {
				return nil, fmt.Errorf("kernel %s: %w", s.Label, err)
			}
			if b.treeHashes == nil {
				b.treeHashes = map[string]string{}
			}
			b.treeHashes[tree] = p.TreeHash
		}
	}
	if p.Patches, err = ReadPatches(s.Patches); err != nil {
		return nil, fault.Input("kernel %s: %w", s.Label, err)
	}
	if p.Fragment, err = ReadFragment(s.Config); err != nil {
		return nil, fault.Input("kernel %s: %w", s.Label, err)
	}
	p.FragSHA = sha([]byte(p.Fragment.Text))
	p.Compiler = compilerVersion(ctx)
	treeID := "tree:" + p.TreeHash
	if p.Git {
		treeID = "git:" + p.Commit
	}
	h := sha256.New()
	fmt.Fprintf(h, "vnetbench kbuild 1\n%s\n%s\n%s\n", treeID, p.FragSHA, p.Compiler)
	p.workID = hex.EncodeToString(h.Sum(nil))[:16]
	for _, pt := range p.Patches {
		fmt.Fprintf(h, "patch %s\n", pt.SHA256)
	}
	p.Key = hex.EncodeToString(h.Sum(nil))[:20]
	return p, nil
}

var (
	versionRe    = regexp.MustCompile(`(?m)^VERSION = [0-9]+$`)
	patchlevelRe = regexp.MustCompile(`(?m)^PATCHLEVEL = [0-9]+$`)
)

// checkKernelTree tells a Linux source tree from anything else.
func checkKernelTree(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("tree %s is not a directory; set tree: to the top of a Linux source tree", dir)
	}
	mk, err := os.ReadFile(filepath.Join(dir, "Makefile"))
	ok := err == nil && versionRe.Match(mk) && patchlevelRe.Match(mk)
	for _, f := range []string{"Kconfig", "arch/x86/Makefile", "scripts/kconfig/Makefile"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("%s is not a Linux kernel tree (no top-level Makefile with VERSION and PATCHLEVEL, Kconfig and arch/x86); set tree: to the top of a kernel source tree", dir)
	}
	return nil
}

func samePath(a, b string) bool {
	ea, err1 := filepath.EvalSymlinks(a)
	eb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ea == eb
}

// hashTree fingerprints a plain tree by its files' names, sizes, modes and
// modification times (reading 1.5 GB of sources on every run would cost
// more than it tells).
func hashTree(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%d\x00%o\x00%d\n", rel, fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("fingerprint tree %s: %w", dir, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func compilerVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "gcc", "--version").Output()
	if err != nil {
		return "gcc (not found)"
	}
	l, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(l)
}

func (b *Builder) gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := b.Exec.Run(ctx, proc.Cmd{Argv: append([]string{"git", "-C", dir}, args...)})
	return string(out), err
}

// work is a locked work tree.
type work struct {
	dir, state string
	lock       *os.File
}

func (w *work) unlock() {
	if w.lock != nil {
		syscall.Flock(int(w.lock.Fd()), syscall.LOCK_UN)
		w.lock.Close()
	}
}

// openWork locks the plan's work tree, creating and configuring it when
// needed, and reverts patches an interrupted build left applied.
func (b *Builder) openWork(ctx context.Context, p *Plan) (*work, error) {
	root := filepath.Join(b.Dir, "work")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	w := &work{dir: filepath.Join(root, p.workID), state: filepath.Join(root, p.workID+".vnb")}
	lf, err := os.OpenFile(filepath.Join(root, p.workID+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := b.flock(ctx, lf, p.Spec.Label, w.dir); err != nil {
		lf.Close()
		return nil, err
	}
	w.lock = lf
	if _, err := os.Stat(filepath.Join(w.state, "ready")); err == nil {
		if err := b.revertAll(ctx, w); err == nil {
			return w, nil
		}
		b.logf("kernel %s: work tree %s is not clean; making it again", p.Spec.Label, w.dir)
	}
	if err := b.createWork(ctx, p, w); err != nil {
		b.removeWork(ctx, p, w)
		w.unlock()
		return nil, err
	}
	return w, nil
}

// flock takes the work tree's lock, waiting (and saying so) while another
// build holds it, until ctx ends.
func (b *Builder) flock(ctx context.Context, f *os.File, label, dir string) error {
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

func (b *Builder) removeWork(ctx context.Context, p *Plan, w *work) {
	os.RemoveAll(w.state)
	os.RemoveAll(w.dir)
	os.RemoveAll(w.dir + ".tmp")
	if p.Git {
		b.Exec.Run(context.WithoutCancel(ctx), proc.Cmd{Argv: []string{"git", "-C", p.Tree, "worktree", "prune"}})
	}
}

func (b *Builder) createWork(ctx context.Context, p *Plan, w *work) error {
	b.removeWork(ctx, p, w)
	start := time.Now()
	if p.Git {
		b.logf("kernel %s: git worktree of %s at %.12s in %s", p.Spec.Label, p.Tree, p.Commit, w.dir)
		if _, err := b.Exec.Run(ctx, proc.Cmd{Argv: []string{"git", "-C", p.Tree, "worktree", "add", "--detach", "--force", w.dir, p.Commit}}); err != nil {
			return fmt.Errorf("kernel %s: %w", p.Spec.Label, err)
		}
	} else {
		b.logf("kernel %s: copying %s (not a git repository) to %s", p.Spec.Label, p.Tree, w.dir)
		if err := os.MkdirAll(w.dir+".tmp", 0o755); err != nil {
			return err
		}
		if _, err := b.Exec.Run(ctx, proc.Cmd{Argv: []string{"cp", "-a", "--", p.Tree + "/.", w.dir + ".tmp"}}); err != nil {
			return fmt.Errorf("kernel %s: copy the tree: %w", p.Spec.Label, err)
		}
		if err := os.Rename(w.dir+".tmp", w.dir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(w.state, "applied"), 0o755); err != nil {
		return err
	}
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
	for _, args := range [][]string{{"allnoconfig", "KCONFIG_ALLCONFIG=" + frag}, {"olddefconfig"}} {
		argv := append([]string{"make", "-C", w.dir}, args...)
		if _, err := b.Exec.Run(ctx, proc.Cmd{Argv: argv, Stdout: log, Stderr: log, Env: b.makeEnv()}); err != nil {
			return fmt.Errorf("kernel %s: configure: %w (log %s)", p.Spec.Label, err, log.Name())
		}
	}
	if err := b.checkConfig(p, w); err != nil {
		return err
	}
	b.logf("kernel %s: work tree ready in %s", p.Spec.Label, time.Since(start).Round(time.Second))
	return os.WriteFile(filepath.Join(w.state, "ready"), nil, 0o644)
}

func orEmpty(cond, s string) string {
	if cond == "" {
		return ""
	}
	return s
}

// checkConfig fails when the work tree's .config lost options of the
// fragment.
func (b *Builder) checkConfig(p *Plan, w *work) error {
	cfg, err := os.ReadFile(filepath.Join(w.dir, ".config"))
	if err != nil {
		return fmt.Errorf("kernel %s: %w", p.Spec.Label, err)
	}
	if lost := p.Fragment.Lost(ReadConfig(string(cfg))); len(lost) > 0 {
		return fault.Input("kernel %s: make olddefconfig dropped %d option(s) of the config fragment: %s; enable what they depend on in config: (see make menuconfig's help for each)",
			p.Spec.Label, len(lost), strings.Join(lost, ", "))
	}
	return nil
}

func (b *Builder) makeEnv() []string {
	env := []string{"KBUILD_BUILD_USER=vnetbench", "KBUILD_BUILD_HOST=vnetbench", "LC_ALL=C"}
	if _, err := exec.LookPath("ccache"); err == nil {
		// Depend mode: a miss costs no extra preprocessor run (kbuild
		// passes -Wp,-MMD), so a cold cache does not slow a first build.
		env = append(env, "CCACHE_DIR="+filepath.Join(b.Dir, "ccache"), "CCACHE_NOHASHDIR=1", "CCACHE_DEPEND=1")
	}
	return env
}

// applied is the state file listing the patches applied to a work tree.
func appliedFiles(w *work) []string {
	m, _ := filepath.Glob(filepath.Join(w.state, "applied", "*.patch"))
	sort.Strings(m)
	return m
}

// apply applies the plan's patches in order; on a failure it reverts the
// ones it applied and names the patch and the hunk.
func (b *Builder) apply(ctx context.Context, p *Plan, w *work) error {
	for i, pt := range p.Patches {
		saved := filepath.Join(w.state, "applied", fmt.Sprintf("%04d.patch", i))
		if err := os.WriteFile(saved, pt.Data, 0o644); err != nil {
			return err
		}
		if _, err := b.gitApply(ctx, p, w, saved, false); err != nil {
			os.Remove(saved)
			rerr := b.revertAll(ctx, w)
			return errors.Join(b.applyError(p, i, err), rerr)
		}
	}
	return nil
}

// gitApply runs git apply in the work tree. Outside a git worktree git
// must not find a repository above the copy (it would apply the paths
// relative to that one).
func (b *Builder) gitApply(ctx context.Context, p *Plan, w *work, patch string, reverse bool) ([]byte, error) {
	argv := []string{"git", "apply", "--whitespace=nowarn"}
	if reverse {
		argv = append(argv, "-R")
	}
	argv = append(argv, patch)
	return b.Exec.Run(ctx, proc.Cmd{Argv: argv, Dir: w.dir, Env: []string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(w.dir)}})
}

// revertAll reverts the applied patches, last first.
func (b *Builder) revertAll(ctx context.Context, w *work) error {
	files := appliedFiles(w)
	for i := len(files) - 1; i >= 0; i-- {
		argv := []string{"git", "apply", "--whitespace=nowarn", "-R", files[i]}
		if _, err := b.Exec.Run(ctx, proc.Cmd{Argv: argv, Dir: w.dir, Env: []string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(w.dir)}}); err != nil {
			return fmt.Errorf("revert %s in %s: %w", files[i], w.dir, err)
		}
		os.Remove(files[i])
	}
	return nil
}

// applyError words a failed git apply: which patch, which file and hunk.
func (b *Builder) applyError(p *Plan, i int, err error) error {
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

// Check applies the plan's patches in its work tree and reverts them: a
// patch that does not apply fails here, before anything is built.
func (b *Builder) Check(ctx context.Context, p *Plan) error {
	w, err := b.openWork(ctx, p)
	if err != nil {
		return err
	}
	defer w.unlock()
	if _, ok := b.Cached(p); ok { // built meanwhile by another process
		return nil
	}
	if err := b.apply(ctx, p, w); err != nil {
		return err
	}
	return b.revertAll(ctx, w)
}

// Build builds the plan's kernel, or returns it from the cache.
func (b *Builder) Build(ctx context.Context, p *Plan) (*Kernel, error) {
	b.defaults()
	if k, ok := b.Cached(p); ok {
		b.logf("kernel %s: %s from the build cache (%s), nothing to build", p.Spec.Label, k.Identity.Release, filepath.Dir(k.Image))
		return k, nil
	}
	if err := b.checkDeps(); err != nil {
		return nil, err
	}
	w, err := b.openWork(ctx, p)
	if err != nil {
		return nil, err
	}
	defer w.unlock()
	// Another process (a run, the e2e test) may have built it while this
	// one waited for the work tree.
	if k, ok := b.Cached(p); ok {
		b.logf("kernel %s: %s built meanwhile by another build, from the build cache (%s)", p.Spec.Label, k.Identity.Release, filepath.Dir(k.Image))
		return k, nil
	}
	if err := b.apply(ctx, p, w); err != nil {
		return nil, err
	}
	k, berr := b.make(ctx, p, w)
	// The work tree goes back to the plain tree (the next kernel of the
	// same tree rebuilds only what the patches touched).
	if rerr := b.revertAll(context.WithoutCancel(ctx), w); rerr != nil {
		b.removeWork(ctx, p, w)
		if berr == nil {
			b.logf("kernel %s: %v; the work tree is made again next time", p.Spec.Label, rerr)
		}
	}
	return k, berr
}

// stats are the compile counts of past full builds, per config fragment:
// the expected work of the next one (for the ETA).
type stats map[string]int

func (b *Builder) readStats() stats {
	s := stats{}
	data, err := os.ReadFile(filepath.Join(b.Dir, "stats.json"))
	if err == nil {
		json.Unmarshal(data, &s)
	}
	return s
}

func (b *Builder) writeStats(s stats) {
	data, _ := json.Marshal(s)
	tmp := filepath.Join(b.Dir, ".stats.json.tmp")
	if os.WriteFile(tmp, data, 0o644) == nil {
		os.Rename(tmp, filepath.Join(b.Dir, "stats.json"))
	}
}

// defaultCompiles is the number of files a full build of BaseConfig
// compiles (linux-source-6.1, 6.1.192), the ETA's guess before a build of
// the config has been seen.
const defaultCompiles = 1750

// make runs the build in the work tree and installs the result into the
// cache under the plan's key.
func (b *Builder) make(ctx context.Context, p *Plan, w *work) (*Kernel, error) {
	if err := os.MkdirAll(filepath.Join(b.Dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(b.Dir, "logs", p.Key+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cfg := ReadConfig(readString(filepath.Join(w.dir, ".config")))
	modules := cfg["CONFIG_MODULES"] == "y"
	targets := []string{"bzImage"}
	if modules {
		targets = append(targets, "modules")
	}
	fresh := !exists(filepath.Join(w.dir, "vmlinux"))
	st := b.readStats()
	touched := b.touched(p, w)
	expect := 0
	switch {
	case fresh:
		expect = st[p.FragSHA]
		if expect == 0 {
			expect = defaultCompiles
		}
	case touched != nil:
		expect = len(touched)
	}
	argv := []string{"make", "-C", w.dir, "-j" + strconv.Itoa(b.Jobs)}
	if _, err := exec.LookPath("ccache"); err == nil {
		argv = append(argv, "CC=ccache gcc", "HOSTCC=ccache gcc")
	}
	argv = append(argv, targets...)
	what := "full build"
	if !fresh {
		what = "incremental build"
	}
	b.logf("kernel %s: building (%s, %s); log %s", p.Spec.Label, what, strings.Join(argv[3:], " "), logPath)
	start := time.Now()
	cpu0 := childCPU()
	cnt := &counter{w: logf, start: start, expect: expect, every: b.Every, log: b.Log, label: p.Spec.Label}
	if err := b.run(ctx, proc.Cmd{Argv: argv, Stdout: cnt, Stderr: cnt, Env: b.makeEnv()}); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("kernel %s: build interrupted (log %s): %w", p.Spec.Label, logPath, ctx.Err())
		}
		logf.Sync()
		return nil, &BuildError{Label: p.Spec.Label, Log: logPath, Errors: errorLines(readString(logPath)), Err: err}
	}
	secs := time.Since(start).Seconds()
	cpu := childCPU() - cpu0
	b.logf("kernel %s: built in %s (%s compiled, %.0f CPU-seconds)", p.Spec.Label, time.Since(start).Round(time.Second), files(cnt.n), cpu)
	if fresh && cnt.n > 0 {
		st[p.FragSHA] = cnt.n
		b.writeStats(st)
	}
	var now []string
	for _, pt := range p.Patches {
		now = append(now, Files(pt.Data)...)
	}
	os.WriteFile(filepath.Join(w.state, "touched"), []byte(strings.Join(now, "\n")), 0o644)
	if err := b.checkConfig(p, w); err != nil {
		return nil, err
	}
	k, err := b.install(ctx, p, w, modules, logPath, secs, cpu)
	if k != nil {
		k.Compiled = cnt.n
	}
	return k, err
}

// touched lists the sources an incremental build recompiles: the files the
// last build's patches and this one's change (they were reverted and are
// applied). nil when that is not known or not only .c files (a header
// recompiles its includers).
func (b *Builder) touched(p *Plan, w *work) []string {
	set := map[string]bool{}
	last := readString(filepath.Join(w.state, "touched"))
	for _, f := range strings.Split(last, "\n") {
		if f != "" {
			set[f] = true
		}
	}
	for _, pt := range p.Patches {
		for _, f := range Files(pt.Data) {
			set[f] = true
		}
	}
	out := []string{}
	for f := range set {
		if !strings.HasSuffix(f, ".c") {
			return nil
		}
		out = append(out, f)
	}
	return out
}

// childCPU is the CPU time (user + system, seconds) of this process's
// waited-for children so far: around a make, what the build cost however
// loaded the machine was.
func childCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// run runs make; on cancel it interrupts make (which deletes the targets it
// was writing) before killing it.
func (b *Builder) run(ctx context.Context, c proc.Cmd) error {
	pr, err := b.Exec.Start(context.WithoutCancel(ctx), c)
	if err != nil {
		return err
	}
	select {
	case <-pr.Done():
		return pr.Wait()
	case <-ctx.Done():
		pr.Stop(syscall.SIGINT, 15*time.Second)
		return ctx.Err()
	}
}

// install copies the build's products into the cache: a temporary
// directory, renamed to out/KEY when complete.
func (b *Builder) install(ctx context.Context, p *Plan, w *work, modules bool, logPath string, secs, cpu float64) (*Kernel, error) {
	rel := strings.TrimSpace(readString(filepath.Join(w.dir, "include", "config", "kernel.release")))
	if rel == "" {
		return nil, fmt.Errorf("kernel %s: the build wrote no include/config/kernel.release", p.Spec.Label)
	}
	outRoot := filepath.Join(b.Dir, "out")
	if err := os.MkdirAll(outRoot, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(outRoot, ".tmp-"+p.Key+"-")
	if err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := copyFile(filepath.Join(w.dir, "arch", "x86", "boot", "bzImage"), filepath.Join(tmp, "bzImage")); err != nil {
		return nil, fmt.Errorf("kernel %s: %w", p.Spec.Label, err)
	}
	config := readString(filepath.Join(w.dir, ".config"))
	if err := os.WriteFile(filepath.Join(tmp, "config"), []byte(config), 0o644); err != nil {
		return nil, err
	}
	modDir := filepath.Join(tmp, "lib", "modules", rel)
	if modules {
		logf, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		_, err = b.Exec.Run(ctx, proc.Cmd{Argv: []string{"make", "-C", w.dir, "INSTALL_MOD_PATH=" + tmp, "INSTALL_MOD_STRIP=1", "modules_install"},
			Stdout: logf, Stderr: logf, Env: b.makeEnv()})
		logf.Close()
		if err != nil {
			return nil, fmt.Errorf("kernel %s: make modules_install: %w (log %s)", p.Spec.Label, err, logPath)
		}
		// Links back into the work tree have no place in the cache.
		os.Remove(filepath.Join(modDir, "build"))
		os.Remove(filepath.Join(modDir, "source"))
	}
	if err := os.MkdirAll(modDir, 0o755); err != nil {
		return nil, err
	}
	if mb := filepath.Join(w.dir, "modules.builtin"); !exists(filepath.Join(modDir, "modules.builtin")) && exists(mb) {
		if err := copyFile(mb, filepath.Join(modDir, "modules.builtin")); err != nil {
			return nil, err
		}
	}
	id := results.KernelBuild{
		Release: rel, ProcVersion: banner(filepath.Join(w.dir, "vmlinux"), rel),
		ConfigSHA256: sha([]byte(config)), Fragment: p.FragSHA,
		Tree: p.Tree, Commit: p.Commit, TreeHash: p.TreeHash, Compiler: p.Compiler, Key: p.Key, Seconds: secs, CPUSeconds: cpu,
	}
	if p.Git {
		id.Ref = p.Spec.Ref
		if id.Ref == "" {
			id.Ref = "HEAD"
		}
	}
	for _, pt := range p.Patches {
		id.Patches = append(id.Patches, results.PatchID{File: pt.Name(), Subject: pt.Subject, SHA256: pt.SHA256})
	}
	data, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "build.json"), append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	final := filepath.Join(outRoot, p.Key)
	if err := os.Rename(tmp, final); err != nil {
		if k, lerr := b.load(final); lerr == nil { // built meanwhile by another run
			return k, nil
		}
		return nil, fmt.Errorf("kernel %s: install into the cache: %w", p.Spec.Label, err)
	}
	done = true
	k, err := b.load(final)
	if err != nil {
		return nil, err
	}
	k.Log = logPath
	return k, nil
}

// load reads a finished cache entry.
func (b *Builder) load(dir string) (*Kernel, error) {
	data, err := os.ReadFile(filepath.Join(dir, "build.json"))
	if err != nil {
		return nil, err
	}
	var id results.KernelBuild
	if err := json.Unmarshal(data, &id); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "build.json"), err)
	}
	k := &Kernel{Image: filepath.Join(dir, "bzImage"), Modules: filepath.Join(dir, "lib", "modules", id.Release), Identity: id}
	for _, p := range []string{k.Image, k.Modules} {
		if !exists(p) {
			return nil, fmt.Errorf("%s: incomplete cache entry (no %s)", dir, filepath.Base(p))
		}
	}
	if l := filepath.Join(b.Dir, "logs", id.Key+".log"); exists(l) {
		k.Log = l
	}
	return k, nil
}

// banner reads the kernel's /proc/version text (linux_banner) from vmlinux.
func banner(vmlinux, release string) string {
	data, err := os.ReadFile(vmlinux)
	if err != nil {
		return ""
	}
	pre := []byte("Linux version " + release + " (")
	i := bytes.Index(data, pre)
	if i < 0 {
		return ""
	}
	s := data[i:]
	if j := bytes.IndexAny(s, "\n\x00"); j >= 0 {
		s = s[:j]
	}
	return string(s)
}

// BuildError is a failed make: the last compiler errors and the log.
type BuildError struct {
	Label  string
	Log    string
	Errors []string
	Err    error
}

func (e *BuildError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernel %s: build failed (%v); full log %s", e.Label, shortErr(e.Err), e.Log)
	if len(e.Errors) > 0 {
		b.WriteString("; last errors:\n")
		for _, l := range e.Errors {
			b.WriteString("  " + l + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func (e *BuildError) Unwrap() error { return e.Err }

// Is makes a failed build bad input (exit 2): the tree, the patches or the
// config do not build.
func (e *BuildError) Is(target error) bool { return target == fault.ErrInput }

func shortErr(err error) string {
	var ee *proc.ExitError
	if errors.As(err, &ee) && ee.ExitCode >= 0 {
		return fmt.Sprintf("make exited with status %d", ee.ExitCode)
	}
	return err.Error()
}

// errorLines picks the last compiler or linker errors of a build log, each
// with the source lines gcc shows after it, at most 15 lines; without any,
// the log's last 10 lines.
func errorLines(log string) []string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	var starts []int
	for i, l := range lines {
		if strings.Contains(l, ": error: ") || strings.Contains(l, ": fatal error: ") ||
			strings.Contains(l, "undefined reference to") || strings.Contains(l, ": Error: ") {
			starts = append(starts, i)
		}
	}
	var out []string
	if len(starts) == 0 {
		from := max(0, len(lines)-10)
		return lines[from:]
	}
	if len(starts) > 3 {
		starts = starts[len(starts)-3:]
	}
	for _, s := range starts {
		out = append(out, lines[s])
		for j := s + 1; j < len(lines) && j <= s+3; j++ {
			l := lines[j]
			if strings.Contains(l, ": error: ") || strings.HasPrefix(l, "make") || strings.HasPrefix(strings.TrimSpace(l), "CC ") {
				break
			}
			out = append(out, l)
		}
	}
	if len(out) > 15 {
		out = out[len(out)-15:]
	}
	return out
}

// counter passes make's output to the log and counts compiled files,
// logging progress with an ETA every so often.
type counter struct {
	w      io.Writer
	part   []byte
	n      int
	expect int
	start  time.Time
	last   time.Time
	every  time.Duration
	log    io.Writer
	label  string
}

func (c *counter) Write(p []byte) (int, error) {
	c.part = append(c.part, p...)
	for {
		i := bytes.IndexByte(c.part, '\n')
		if i < 0 {
			break
		}
		line := c.part[:i]
		if bytes.HasPrefix(line, []byte("  CC ")) || bytes.HasPrefix(line, []byte("  CC\t")) {
			c.n++
		}
		c.part = c.part[i+1:]
	}
	if c.log != nil && time.Since(c.last) >= c.every && time.Since(c.start) >= c.every {
		c.last = time.Now()
		fmt.Fprintf(c.log, "kernel %s: building: %s\n", c.label, progressLine(c.n, c.expect, time.Since(c.start)))
	}
	return c.w.Write(p)
}

// progressLine is "812/1650 files, 4m10s, eta 4m20s" (or without the
// total and ETA when the amount of work is unknown).
func progressLine(n, expect int, elapsed time.Duration) string {
	el := elapsed.Round(time.Second)
	if expect <= 0 {
		return fmt.Sprintf("%s compiled, %s", files(n), el)
	}
	if n >= expect {
		return fmt.Sprintf("%s compiled (expected %d), %s, eta soon", files(n), expect, el)
	}
	eta := "eta unknown"
	if n > 0 {
		left := time.Duration(float64(elapsed) / float64(n) * float64(expect-n))
		eta = "eta " + left.Round(time.Second).String()
	}
	return fmt.Sprintf("%d/%d files, %s, %s", n, expect, el, eta)
}

func files(n int) string {
	if n == 1 {
		return "1 file"
	}
	return strconv.Itoa(n) + " files"
}

func readString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, bufio.NewReader(in)); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
