package kbuild

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/testenv"
)

// fakeMakefile stands in for kbuild in a tiny tree: the targets the
// Builder runs, "  CC" lines for what it compiles (src/*.c newer than
// their objects), a compiler error for a source holding "#error", and an
// allnoconfig that drops CONFIG_DROPME (as olddefconfig drops an option
// whose dependencies are off).
const fakeMakefile = `VERSION = 6
PATCHLEVEL = 1
SUBLEVEL = 0
REL := 6.1.0-fake
SRCS := $(sort $(wildcard src/*.c))
OBJS := $(SRCS:.c=.o)

allnoconfig:
	@grep -v DROPME $(KCONFIG_ALLCONFIG) > .config

olddefconfig:
	@true

src/%.o: src/%.c .config
	@echo "  CC      $@"
	@if grep -q SLOW $<; then sleep 30; fi
	@if grep -q '#error' $<; then echo "$<:1:2: error: #error here"; echo "    1 | #error here"; exit 1; fi
	@cp $< $@

vmlinux: $(OBJS)
	@echo "  LD      vmlinux"
	@mkdir -p include/config; echo $(REL) > include/config/kernel.release
	@printf 'junk\0Linux version $(REL) (vnetbench@vnetbench) (fake cc) #1 SMP\n\0' > vmlinux; cat $(OBJS) >> vmlinux

bzImage: vmlinux
	@mkdir -p arch/x86/boot; cp vmlinux arch/x86/boot/bzImage

modules: vmlinux
	@echo kernel/drivers/net/tun.ko > modules.builtin

modules_install:
	@mkdir -p $(INSTALL_MOD_PATH)/lib/modules/$(REL); cp modules.builtin $(INSTALL_MOD_PATH)/lib/modules/$(REL)/
	@ln -sf $(CURDIR) $(INSTALL_MOD_PATH)/lib/modules/$(REL)/build
`

const tunC = "int tun_xmit(void)\n{\n\treturn drop();\n}\n"

// fakeTree writes a fake kernel tree and returns its path.
func fakeTree(t *testing.T) string {
	t.Helper()
	needTools(t, "make", "git", "cp")
	dir := filepath.Join(t.TempDir(), "linux")
	files := map[string]string{
		"Makefile":                 fakeMakefile,
		"Kconfig":                  "mainmenu \"fake\"\n",
		"arch/x86/Makefile":        "# fake\n",
		"scripts/kconfig/Makefile": "# fake\n",
		"src/a.c":                  "int a;\n",
		"src/tun.c":                tunC,
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skipf(t, "needs %s", tool)
		}
	}
}

// tunPatch is a git format-patch mail changing src/tun.c.
const tunPatch = `From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001
From: A U Thor <a@example.invalid>
Date: Mon, 30 Nov 2026 18:00:00 +0000
Subject: [PATCH net-next v2 1/1] tun: stop the queue
 instead of dropping

Body.
---
 src/tun.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/src/tun.c b/src/tun.c
--- a/src/tun.c
+++ b/src/tun.c
@@ -1,4 +1,4 @@
 int tun_xmit(void)
 {
-	return drop();
+	return stop_queue();
 }
-- 
2.39.5
`

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func newBuilder(t *testing.T) (*Builder, *bytes.Buffer) {
	var log bytes.Buffer
	return &Builder{Dir: filepath.Join(t.TempDir(), "kbuild"), Jobs: 2, Log: &log, Every: time.Nanosecond, noDeps: true}, &log
}

// cacheEntries lists out/ (finished builds and leftovers alike).
func cacheEntries(t *testing.T, b *Builder) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(b.Dir, "out"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestBuildStockPatchedCachedIncremental(t *testing.T) {
	tree := fakeTree(t)
	patch := writeFile(t, t.TempDir(), "0001-tun.patch", tunPatch)
	b, log := newBuilder(t)
	specs := []Spec{{Label: "stock", Tree: tree}, {Label: "patched", Tree: tree, Patches: []string{patch}}}
	ks, err := b.BuildAll(t.Context(), specs)
	if err != nil {
		t.Fatalf("BuildAll: %v\n%s", err, log)
	}
	stock, patched := ks[0], ks[1]
	if stock.Cached || patched.Cached {
		t.Fatalf("first build came from the cache")
	}
	// The patched build shares the stock work tree: only tun.c recompiles.
	if stock.Compiled != 2 || patched.Compiled != 1 {
		t.Errorf("compiled stock %d, patched %d files; want 2 (full) and 1 (incremental)", stock.Compiled, patched.Compiled)
	}
	for _, k := range ks {
		if k.Identity.Release != "6.1.0-fake" {
			t.Errorf("release %q", k.Identity.Release)
		}
		if !strings.HasPrefix(k.Identity.ProcVersion, "Linux version 6.1.0-fake (vnetbench@vnetbench)") {
			t.Errorf("proc version %q", k.Identity.ProcVersion)
		}
		if k.Identity.TreeHash == "" || k.Identity.Commit != "" {
			t.Errorf("plain tree: tree hash %q, commit %q", k.Identity.TreeHash, k.Identity.Commit)
		}
		if _, err := os.Stat(filepath.Join(k.Modules, "modules.builtin")); err != nil {
			t.Errorf("modules dir: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(k.Modules, "build")); err == nil {
			t.Errorf("the cached modules dir links back into the work tree")
		}
	}
	if stock.Identity.ConfigSHA256 != patched.Identity.ConfigSHA256 {
		t.Errorf("stock and patched configs differ")
	}
	if stock.Identity.Key == patched.Identity.Key {
		t.Errorf("stock and patched share a cache key")
	}
	if got := patched.Identity.Patches; len(got) != 1 || got[0].Subject != "tun: stop the queue instead of dropping" || got[0].File != patch {
		t.Errorf("patches = %+v", got)
	}
	img, _ := os.ReadFile(patched.Image)
	if !bytes.Contains(img, []byte("stop_queue")) {
		t.Errorf("patched image lacks the patch")
	}
	img, _ = os.ReadFile(stock.Image)
	if bytes.Contains(img, []byte("stop_queue")) {
		t.Errorf("stock image has the patch")
	}
	if !strings.Contains(log.String(), "eta") {
		t.Errorf("no progress line with an ETA in the log:\n%s", log)
	}
	// The user's tree is untouched, the work tree is back to the plain tree.
	if b, _ := os.ReadFile(filepath.Join(tree, "src", "tun.c")); string(b) != tunC {
		t.Errorf("the user's tree changed")
	}

	// A second run builds nothing.
	log.Reset()
	ks2, err := b.BuildAll(t.Context(), specs)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range ks2 {
		if !k.Cached || k.Image != ks[i].Image {
			t.Errorf("second run, kernel %d: cached %v, image %s (want %s)", i, k.Cached, k.Image, ks[i].Image)
		}
	}
	if strings.Contains(log.String(), "building") {
		t.Errorf("second run built:\n%s", log)
	}
}

func TestPatchDoesNotApply(t *testing.T) {
	tree := fakeTree(t)
	dir := t.TempDir()
	writeFile(t, dir, "0001-good.patch", tunPatch)
	writeFile(t, dir, "0002-bad.patch", strings.NewReplacer("stop_queue", "wake_queue", "drop()", "nothing()").Replace(
		strings.Replace(tunPatch, "Subject: [PATCH net-next v2 1/1] tun: stop the queue\n instead of dropping", "Subject: [PATCH 2/2] tun: wake", 1)))
	b, log := newBuilder(t)
	_, err := b.BuildAll(t.Context(), []Spec{{Label: "stock", Tree: tree}, {Label: "patched", Tree: tree, Patches: []string{filepath.Join(dir, "*.patch")}}})
	if err == nil {
		t.Fatal("a patch that does not apply built")
	}
	if !errors.Is(err, fault.ErrInput) {
		t.Errorf("not an input error: %v", err)
	}
	for _, want := range []string{"kernel patched", "patch 2/2", "0002-bad.patch", `"tun: wake"`, "src/tun.c", "@@ -1,4 +1,4 @@"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is more than one line: %q", err)
	}
	// Nothing was built (stock neither: the check comes first) and the
	// work tree is the plain tree again.
	if e := cacheEntries(t, b); len(e) > 0 {
		t.Errorf("cache entries after a failed check: %v", e)
	}
	if strings.Contains(log.String(), "building") {
		t.Errorf("built before checking the patches:\n%s", log)
	}
	works, _ := filepath.Glob(filepath.Join(b.Dir, "work", "*", "src", "tun.c"))
	for _, w := range works {
		if b, _ := os.ReadFile(w); string(b) != tunC {
			t.Errorf("work tree %s keeps a patch", w)
		}
	}
}

func TestBuildFailureShowsErrorsAndLeavesNoEntry(t *testing.T) {
	tree := fakeTree(t)
	broken := strings.Replace(tunPatch, "+\treturn stop_queue();", "+#error here", 1)
	patch := writeFile(t, t.TempDir(), "broken.patch", broken)
	b, _ := newBuilder(t)
	_, err := b.BuildAll(t.Context(), []Spec{{Label: "patched", Tree: tree, Patches: []string{patch}}})
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("want a BuildError, got %v", err)
	}
	if !errors.Is(err, fault.ErrInput) {
		t.Errorf("a failed build is not exit-2 class: %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"kernel patched: build failed", "src/tun.c:1:2: error: #error here", "1 | #error here", be.Log} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if _, err := os.Stat(be.Log); err != nil {
		t.Errorf("log not kept: %v", err)
	}
	if e := cacheEntries(t, b); len(e) > 0 {
		t.Errorf("a failed build left cache entries: %v", e)
	}
}

func TestInterruptedBuildLeavesNoEntry(t *testing.T) {
	tree := fakeTree(t)
	writeFile(t, tree, "src/slow.c", "SLOW\n")
	b, _ := newBuilder(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err := b.BuildAll(ctx, []Spec{{Label: "stock", Tree: tree}})
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want an interrupted build, got %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("interrupt took %v", d)
	}
	if e := cacheEntries(t, b); len(e) > 0 {
		t.Errorf("an interrupted build left cache entries: %v", e)
	}
}

func TestBadInput(t *testing.T) {
	tree := fakeTree(t)
	dir := t.TempDir()
	frag := writeFile(t, dir, "frag.config", "CONFIG_DROPME=y\nCONFIG_TUN=y\n")
	notPatch := writeFile(t, dir, "notes.patch", "just words\n")
	b, _ := newBuilder(t)
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"not a kernel tree", Spec{Label: "x", Tree: dir}, "is not a Linux kernel tree"},
		{"missing tree", Spec{Label: "x", Tree: filepath.Join(dir, "nope")}, "is not a directory"},
		{"ref on a plain tree", Spec{Label: "x", Tree: tree, Ref: "main"}, "is not a git repository"},
		{"missing patch", Spec{Label: "x", Tree: tree, Patches: []string{filepath.Join(dir, "none.patch")}}, "no such file"},
		{"empty glob", Spec{Label: "x", Tree: tree, Patches: []string{filepath.Join(dir, "v9", "*.patch")}}, "matches no file"},
		{"not a patch", Spec{Label: "x", Tree: tree, Patches: []string{notPatch}}, "holds no diff"},
		{"lost option", Spec{Label: "x", Tree: tree, Config: frag}, "CONFIG_DROPME=y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.BuildAll(t.Context(), []Spec{tc.spec})
			if err == nil || !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want an input error with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("more than one line: %q", err)
			}
		})
	}
	if e := cacheEntries(t, b); len(e) > 0 {
		t.Errorf("bad input left cache entries: %v", e)
	}
}

func TestGitTreeWorktree(t *testing.T) {
	tree := fakeTree(t)
	git := gitIn(t, tree)
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-qm", "base")
	base := git("rev-parse", "HEAD")
	git("tag", "v1")
	writeFile(t, tree, "src/a.c", "int a = 2;\n")
	git("commit", "-qam", "later")
	b, log := newBuilder(t)
	if _, err := b.BuildAll(t.Context(), []Spec{{Label: "x", Tree: tree, Ref: "no-such-ref"}}); err == nil || !strings.Contains(err.Error(), `ref "no-such-ref" is not a commit`) {
		t.Fatalf("missing ref: %v", err)
	}
	ks, err := b.BuildAll(t.Context(), []Spec{{Label: "stock", Tree: tree, Ref: "v1"}})
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	id := ks[0].Identity
	if id.Commit != base || id.Ref != "v1" || id.TreeHash != "" {
		t.Errorf("identity commit %q ref %q tree hash %q; want commit %s ref v1", id.Commit, id.Ref, id.TreeHash, base)
	}
	img, _ := os.ReadFile(ks[0].Image)
	if !bytes.Contains(img, []byte("int a;")) || bytes.Contains(img, []byte("int a = 2;")) {
		t.Errorf("not built at v1")
	}
	if !strings.Contains(git("worktree", "list"), filepath.Join(b.Dir, "work")) {
		t.Errorf("no git worktree in the cache: %s", git("worktree", "list"))
	}
}

// A ref: that reads as a git option (--output=FILE makes git write FILE)
// is a ref like any other: not a commit, bad input, no file written.
func TestGitRefIsNotAnOption(t *testing.T) {
	tree := fakeTree(t)
	git := gitIn(t, tree)
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-qm", "base")
	victim := filepath.Join(t.TempDir(), "victim")
	b, _ := newBuilder(t)
	_, err := b.Resolve(t.Context(), Spec{Label: "x", Tree: tree, Ref: "--output=" + victim})
	if !errors.Is(err, fault.ErrInput) {
		t.Errorf("ref --output=FILE: %v, want bad input", err)
	}
	if _, err := os.Lstat(victim); err == nil {
		t.Errorf("git wrote %s", victim)
	}
}

// A work tree another build holds is waited for, with a line saying so,
// and the wait ends with the context.
func TestWorkTreeLockWaits(t *testing.T) {
	tree := fakeTree(t)
	b, log := newBuilder(t)
	_, w := stockWork(t, b, tree)
	defer w.unlock()
	// Cancel once the build says it waits, not after a fixed time: copying
	// the tree before the wait took over 2 s on a loaded CI machine.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	lw := &lockedBuf{b: log, mu: &sync.Mutex{}}
	done := make(chan error, 1)
	go func() {
		_, err := (&Builder{Dir: b.Dir, Log: lw, noDeps: true}).BuildAll(ctx, []Spec{{Label: "patched", Tree: tree}})
		done <- err
	}()
	waiting := "kernel patched: waiting for another build in"
	for !strings.Contains(lw.String(), waiting) {
		select {
		case err := <-done:
			t.Fatalf("build ended without waiting for the lock: %v, log:\n%s", err, lw)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want the cancelled wait; log:\n%s", err, lw)
	}
}

// A build that waited for the work tree while another process built the
// same kernel takes it from the cache instead of building it again (make
// test starts the kernel build beside the lab e2e, which builds the same
// kernels).
func TestBuiltWhileWaiting(t *testing.T) {
	tree := fakeTree(t)
	other, olog := newBuilder(t)
	spec := Spec{Label: "stock", Tree: tree}
	if _, err := other.BuildAll(t.Context(), []Spec{spec}); err != nil {
		t.Fatalf("%v\n%s", err, olog)
	}
	b, log := newBuilder(t)
	p, err := b.Resolve(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.openWork(t.Context(), p) // the other build holds the work tree
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var ks []*Kernel
	var mu sync.Mutex
	lw := &lockedBuf{b: log, mu: &mu}
	go func() {
		var err error
		ks, err = (&Builder{Dir: b.Dir, Log: lw, noDeps: true}).BuildAll(t.Context(), []Spec{spec})
		done <- err
	}()
	for !strings.Contains(lw.String(), "waiting for another build") {
		time.Sleep(10 * time.Millisecond)
	}
	// The holder finishes: its kernel lands in the cache, then it unlocks.
	if out, err := exec.Command("cp", "-a", filepath.Join(other.Dir, "out"), b.Dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	w.unlock()
	if err := <-done; err != nil {
		t.Fatalf("%v\n%s", err, lw)
	}
	if !ks[0].Cached || ks[0].Compiled != 0 || !strings.Contains(lw.String(), "built meanwhile by another build") {
		t.Errorf("cached %v, compiled %d; log:\n%s", ks[0].Cached, ks[0].Compiled, lw)
	}
}

// lockedBuf is a log written by one goroutine and read by another.
type lockedBuf struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Builds at other commits of one git tree share its work tree: each
// checks its commit out there and recompiles only the files that differ
// (bisect's incremental builds), and each image is its commit's.
func TestGitCommitsShareWorkTree(t *testing.T) {
	tree := fakeTree(t)
	git := gitIn(t, tree)
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-qm", "base")
	base := git("rev-parse", "HEAD")
	writeFile(t, tree, "src/tun.c", "int tun_xmit(void)\n{\n\treturn stop_queue();\n}\n")
	git("commit", "-qam", "stop the queue")
	stop := git("rev-parse", "HEAD")
	b, log := newBuilder(t)
	build := func(ref string) *Kernel {
		t.Helper()
		ks, err := b.BuildAll(t.Context(), []Spec{{Label: ref[:7], Tree: tree, Ref: ref}})
		if err != nil {
			t.Fatalf("build %s: %v\n%s", ref, err, log)
		}
		return ks[0]
	}
	kb := build(base)
	ks := build(stop)
	if kb.Compiled != 2 || ks.Compiled != 1 {
		t.Errorf("compiled %d files at base, %d at the next commit; want 2 (full) and 1 (tun.c only)\n%s", kb.Compiled, ks.Compiled, log)
	}
	if !strings.Contains(log.String(), "(1 file changed)") {
		t.Errorf("no checkout line in the log:\n%s", log)
	}
	if kb.Identity.Commit != base || ks.Identity.Commit != stop {
		t.Errorf("commits %s, %s; want %s, %s", kb.Identity.Commit, ks.Identity.Commit, base, stop)
	}
	if kb.Identity.ConfigSHA256 != ks.Identity.ConfigSHA256 {
		t.Errorf("the commits' configs differ")
	}
	for _, c := range []struct {
		k    *Kernel
		want bool
	}{{kb, false}, {ks, true}} {
		img, _ := os.ReadFile(c.k.Image)
		if bytes.Contains(img, []byte("stop_queue")) != c.want {
			t.Errorf("image of %s: stop_queue in it %v, want %v", c.k.Identity.Commit, !c.want, c.want)
		}
	}
	work, _ := filepath.Glob(filepath.Join(b.Dir, "work", "*.vnb"))
	if len(work) != 1 {
		t.Errorf("%d work trees for one tree and config, want 1: %v", len(work), work)
	}
	// Back at base: from the cache, nothing built.
	if k := build(base); !k.Cached {
		t.Errorf("base built again")
	}
}

// gitIn returns a runner of git commands in tree (as a fixed author) that
// fails the test on an error and returns the trimmed output.
func gitIn(t *testing.T, tree string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", tree}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@invalid")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
}
