package kbuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
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
	// Fresh: built in a work tree that had built nothing yet (not
	// incrementally after another kernel).
	Fresh bool
}

// Builder builds kernels into its cache directory:
//
//	DIR/out/KEY/        a finished build: bzImage, lib/modules/RELEASE/,
//	                    config, build.json (identity); written to a
//	                    temporary directory first and renamed, so a failed
//	                    or interrupted build leaves no entry
//	DIR/work/ID/        the work tree of one (tree, config): a git
//	                    worktree, checked out at each build's commit, or a
//	                    copy of a plain tree; kernels of the same tree and
//	                    config (stock, patched, other commits) share it, so
//	                    a build recompiles only what changed since the last
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
	// Images is the cache directory of Debian kernel packages (vmimages';
	// "" = the directory holding Dir) for module builds.
	Images string

	noDeps bool // tests: skip the host dependency check
	// treeHashes remembers plain trees' fingerprints (a walk of ~75,000
	// files per kernel otherwise; stock and patched share a tree).
	treeHashes map[string]string
	// includes remembers trees' #include scans (Decide).
	includes includeCache
	// logMu orders Log's lines of module builds that run at once.
	logMu sync.Mutex
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

// Kernel returns the plan's kernel when the cache holds it.
func (c Cache) Kernel(p *Plan) (*Kernel, bool) {
	k, err := c.load(filepath.Join(string(c), "out", p.Key))
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
		if _, ok := Cache(b.Dir).Kernel(p); !ok {
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
		b.logMu.Lock()
		fmt.Fprintf(b.Log, format+"\n", a...)
		b.logMu.Unlock()
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
	top, gerr := Git(ctx, b.Exec, tree, "rev-parse", "--show-toplevel")
	if gerr == nil && samePath(strings.TrimSpace(top), tree) {
		p.Git = true
		ref := s.Ref
		if ref == "" {
			ref = "HEAD"
		}
		if p.Commit, err = Commit(ctx, b.Exec, tree, ref); err != nil {
			return nil, fault.Input("kernel %s: ref %q is not a commit in %s; check it with git -C %s log %s (or fetch it first)", s.Label, ref, tree, tree, ref)
		}
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
	if p.Git {
		// One work tree per git tree and config, whatever the commit:
		// a build at another commit checks it out there and recompiles
		// only what changed (bisect's steps, stock and patched refs).
		w := sha256.Sum256(fmt.Appendf(nil, "vnetbench kbuild work 2\ngit-tree:%s\n%s\n%s\n", tree, p.FragSHA, p.Compiler))
		p.workID = hex.EncodeToString(w[:])[:16]
	}
	for _, pt := range p.Patches {
		fmt.Fprintf(h, "patch %s\n", pt.SHA256)
	}
	p.Key = hex.EncodeToString(h.Sum(nil))[:20]
	return p, nil
}

var (
	versionRe    = lazyre.New(`(?m)^VERSION = [0-9]+$`)
	patchlevelRe = lazyre.New(`(?m)^PATCHLEVEL = [0-9]+$`)
)

// IsKernelTree is the check a build makes of its tree, for a command
// (bisect) that would otherwise learn of a wrong tree only at its first
// build, after its estimate and the scenario's first steps.
func IsKernelTree(dir string) bool { return checkKernelTree(dir) == nil }

// checkKernelTree tells a Linux source tree from anything else.
func checkKernelTree(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("tree %s is not a directory; set tree: to the top of a Linux source tree", dir)
	}
	mk, err := os.ReadFile(filepath.Join(dir, "Makefile"))
	ok := err == nil && versionRe().Match(mk) && patchlevelRe().Match(mk)
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
	out, err := (proc.Real{}).Run(ctx, proc.Cmd{Argv: []string{"gcc", "--version"}})
	if err != nil {
		return "gcc (not found)"
	}
	l, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(l)
}

func orEmpty(cond, s string) string {
	if cond == "" {
		return ""
	}
	return s
}

// checkConfig fails when the work tree's .config lost options of the
// fragment.
func (w *work) checkConfig() error {
	p := w.p
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

// Check applies the plan's patches in its work tree and reverts them: a
// patch that does not apply fails here, before anything is built.
func (b *Builder) Check(ctx context.Context, p *Plan) error {
	w, err := b.openWork(ctx, p)
	if err != nil {
		return err
	}
	defer w.unlock()
	if _, ok := Cache(b.Dir).Kernel(p); ok { // built meanwhile by another process
		return nil
	}
	if err := w.apply(ctx); err != nil {
		return err
	}
	return w.revertAll(ctx)
}

// Build builds the plan's kernel, or returns it from the cache.
func (b *Builder) Build(ctx context.Context, p *Plan) (*Kernel, error) {
	b.defaults()
	if k, ok := Cache(b.Dir).Kernel(p); ok {
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
	if k, ok := Cache(b.Dir).Kernel(p); ok {
		b.logf("kernel %s: %s built meanwhile by another build, from the build cache (%s)", p.Spec.Label, k.Identity.Release, filepath.Dir(k.Image))
		return k, nil
	}
	if err := w.apply(ctx); err != nil {
		return nil, err
	}
	k, berr := b.make(ctx, p, w)
	// The work tree goes back to the plain tree (the next kernel of the
	// same tree rebuilds only what the patches touched).
	if rerr := w.revertAll(context.WithoutCancel(ctx)); rerr != nil {
		if err := w.remove(ctx); err != nil {
			b.logf("%v", err)
		}
		if berr == nil {
			b.logf("kernel %s: %v; the work tree is made again next time", p.Spec.Label, rerr)
		}
	}
	return k, berr
}

// stats are the compile counts of past full builds, per config fragment:
// the expected work of the next one (for the ETA).
type stats map[string]int

// readStats reads the stats of the build cache in dir (none when there
// are none yet or they cannot be read).
func readStats(dir string) stats {
	s := stats{}
	data, err := os.ReadFile(filepath.Join(dir, "stats.json"))
	if err == nil {
		json.Unmarshal(data, &s)
	}
	return s
}

// write replaces the stats of the build cache in dir; a failure leaves
// the old ones (the ETA is a guess either way).
func (s stats) write(dir string) {
	data, _ := json.Marshal(s)
	tmp := filepath.Join(dir, ".stats.json.tmp")
	if os.WriteFile(tmp, data, 0o644) == nil {
		os.Rename(tmp, filepath.Join(dir, "stats.json"))
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
	st := readStats(b.Dir)
	touched := w.touched()
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
	if _, err := proc.LookPath("ccache"); err == nil {
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
	if err := b.run(ctx, proc.Cmd{Argv: argv, Stdout: cnt, Stderr: cnt, Env: Cache(b.Dir).makeEnv()}); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("kernel %s: build interrupted (log %s): %w", p.Spec.Label, logPath, ctx.Err())
		}
		logf.Sync()
		return nil, &BuildError{Label: p.Spec.Label, Log: logPath, Errors: errorLines(readString(logPath)), Err: err}
	}
	secs := time.Since(start).Seconds()
	cpu := childCPU() - cpu0
	b.logf("kernel %s: built in %s (%s compiled, %.0f CPU-seconds)", p.Spec.Label, time.Since(start).Round(time.Second), units.Plural(cnt.n, "file"), cpu)
	if fresh && cnt.n > 0 {
		st[p.FragSHA] = cnt.n
		st.write(b.Dir)
	}
	var now []string
	for _, pt := range p.Patches {
		now = append(now, Files(pt.Data)...)
	}
	os.WriteFile(filepath.Join(w.state, "touched"), []byte(strings.Join(now, "\n")), 0o644)
	if err := w.checkConfig(); err != nil {
		return nil, err
	}
	k, err := b.install(ctx, p, w, modules, logPath, secs, cpu)
	if k != nil {
		k.Compiled, k.Fresh = cnt.n, fresh
	}
	return k, err
}

// touched lists the sources an incremental build recompiles: the files the
// last build's patches and this one's change (they were reverted and are
// applied). nil when that is not known or not only .c files (a header
// recompiles its includers).
func (w *work) touched() []string {
	p := w.p
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
