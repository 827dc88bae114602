package proc

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

// rootHelperEnv makes this test binary, started chrooted by
// TestRootChroot, report what it sees instead of running tests.
const rootHelperEnv = "VNB_PROC_ROOT_HELPER"

// TestRootHelper is the chrooted child of TestRootChroot; it does nothing
// in a normal test run.
func TestRootHelper(t *testing.T) {
	if os.Getenv(rootHelperEnv) == "" {
		return
	}
	wd, _ := os.Getwd()
	_, marker := os.Stat("/marker")
	sid, _, _ := syscall.RawSyscall(syscall.SYS_GETSID, 0, 0, 0)
	fmt.Printf("argv0=%s wd=%s marker=%v session-leader=%v env=%s\n",
		os.Args[0], wd, marker == nil, int(sid) == os.Getpid(), strings.Join(os.Environ(), ","))
	os.Exit(7)
}

// A Root command runs chrooted (it sees the new root's files and its
// working directory inside it), under the name Argv[0], with exactly
// Env as its environment, as a session leader, and its exit code is the
// status a shell would report. The child is this test binary, copied
// into the new root with its loader and libraries when it has any (a
// cgo or -race build).
func TestRootChroot(t *testing.T) {
	testenv.NeedRoot(t, "chroot")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"bin/helper", b}, {"marker", nil}, {"work/.keep", nil}} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f.name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyLibraries(t, self, dir) // a cgo (-race) binary needs its loader and libraries
	out, err := Real{}.Run(t.Context(), Cmd{
		Argv: []string{"helper", "-test.run=^TestRootHelper$"},
		Dir:  "/work",
		Env:  []string{rootHelperEnv + "=1", "ONLY=this"},
		Root: &Root{Dir: dir, Path: "/bin/helper"},
	})
	want := "argv0=helper wd=/work marker=true session-leader=true env=" + rootHelperEnv + "=1,ONLY=this\n"
	if string(out) != want {
		t.Errorf("the chrooted child saw\n%s\nwant\n%s", out, want)
	}
	var ee *ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("err = %v, want an *ExitError", err)
	}
	if st, ok := ee.Status(); st != 7 || !ok {
		t.Errorf("Status() = %d, %v; want 7, true", st, ok)
	}
}

// copyLibraries copies the ELF interpreter and the libraries the binary
// at path names (DT_NEEDED) into root, at the paths they have here, so
// that a dynamically linked binary (a cgo or -race test binary) runs
// chrooted there. A static binary needs none.
func copyLibraries(t *testing.T, path, root string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var files []string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				t.Fatal(err)
			}
			files = append(files, strings.TrimRight(string(b), "\x00"))
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range libs {
		files = append(files, findLibrary(t, lib))
	}
	for _, src := range files {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(root, src)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// findLibrary is the path of library lib in the loader's default
// directories (Debian's multiarch ones first).
func findLibrary(t *testing.T, lib string) string {
	t.Helper()
	for _, d := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"} {
		if p := filepath.Join(d, lib); fileExists(p) {
			return p
		}
	}
	t.Fatalf("the test binary needs %s, found in none of the loader's default directories", lib)
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// A Root command's stdout file is its own descriptor (no pipe: Output
// keeps nothing of it), a signal's status is 128+signal, and a Root
// with no Path or with a netns is refused before anything starts.
func TestRootStdoutFileAndSignal(t *testing.T) {
	testenv.NeedRoot(t, "chroot")
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Real{}.Start(t.Context(), Cmd{
		Argv:   []string{"sh", "-c", "ls -l /proc/self/fd/1; kill -TERM $$"},
		Stdout: f,
		Root:   &Root{Dir: "/", Path: "/bin/sh"},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Wait()
	var ee *ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("err = %v, want an *ExitError", err)
	}
	if st, ok := ee.Status(); st != 128+int(syscall.SIGTERM) || !ok {
		t.Errorf("Status() = %d, %v; want %d, true", st, ok, 128+int(syscall.SIGTERM))
	}
	b, _ := os.ReadFile(f.Name())
	if !strings.Contains(string(b), "-> "+f.Name()) {
		t.Errorf("the child's stdout was not the file itself: %q", b)
	}
	if out, _ := p.Output(); out != "" {
		t.Errorf("Output kept %q of a stream that went to a file", out)
	}
	// Run likewise leaves the file to the child, and returns nothing.
	g, err := os.Create(filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	out, err := Real{}.Run(t.Context(), Cmd{Argv: []string{"sh", "-c", "ls -l /proc/self/fd/1"}, Stdout: g, Root: &Root{Dir: "/", Path: "/bin/sh"}})
	if b, _ := os.ReadFile(g.Name()); err != nil || len(out) != 0 || !strings.Contains(string(b), "-> "+g.Name()) {
		t.Errorf("Run: err %v, returned %q, the file holds %q", err, out, b)
	}
	for _, c := range []Cmd{
		{Argv: []string{"sh"}, Root: &Root{Dir: "/"}},
		{Argv: []string{"sh"}, Netns: "vnb-x", Root: &Root{Dir: "/", Path: "/bin/sh"}},
	} {
		_, err := Real{}.Run(t.Context(), c)
		if !errors.As(err, &ee) || ee.ExitCode != -1 || ee.Signal != "" {
			t.Errorf("%+v netns %q: err = %v, want a refusal", *c.Root, c.Netns, err)
		}
	}
}
