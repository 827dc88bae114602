package kbuild

// A finished build in the cache: its bzImage, modules and identity.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
)

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
			Stdout: logf, Stderr: logf, Env: Cache(b.Dir).makeEnv()})
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
		if k, lerr := Cache(b.Dir).load(final); lerr == nil { // built meanwhile by another run
			return k, nil
		}
		return nil, fmt.Errorf("kernel %s: install into the cache: %w", p.Spec.Label, err)
	}
	done = true
	k, err := Cache(b.Dir).load(final)
	if err != nil {
		return nil, err
	}
	k.Log = logPath
	return k, nil
}

// Cache is the build cache's directory (Builder.Dir): finished builds in
// out/, their logs in logs/, decisions in decide/, module builds in mod/,
// Debian's headers in headers/, ccache's cache, temporary directories.
// Its lookups (Kernel, Decision, Modules) write nothing: plan tells with
// them what a run would build, without building it.
type Cache string

// load reads a finished cache entry.
func (c Cache) load(dir string) (*Kernel, error) {
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
	if l := filepath.Join(string(c), "logs", id.Key+".log"); exists(l) {
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

// tmpRoot is the cache's directory of temporary work directories
// (created when missing).
func (c Cache) tmpRoot() string {
	root := filepath.Join(string(c), "tmp")
	os.MkdirAll(root, 0o755)
	return root
}

// makeEnv is the environment of the kernel's make: a fixed build user
// and host, and ccache (when installed) with its cache in c.
func (c Cache) makeEnv() []string {
	env := []string{"KBUILD_BUILD_USER=vnetbench", "KBUILD_BUILD_HOST=vnetbench", "LC_ALL=C"}
	if _, err := proc.LookPath("ccache"); err == nil {
		// Depend mode: a miss costs no extra preprocessor run (kbuild
		// passes -Wp,-MMD), so a cold cache does not slow a first build.
		env = append(env, "CCACHE_DIR="+filepath.Join(string(c), "ccache"), "CCACHE_NOHASHDIR=1", "CCACHE_DEPEND=1")
	}
	return env
}
