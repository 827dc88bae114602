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
// into the new root (it is statically linked: nothing else is needed).
func TestRootChroot(t *testing.T) {
	testenv.NeedRoot(t, "chroot")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if !static(t, self) {
		testenv.Skip(t, "the test binary is dynamically linked (cgo): a chroot would need its libraries")
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

// static reports whether the ELF file at path has no interpreter.
func static(t *testing.T, path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
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
