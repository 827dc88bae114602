// Package testenv decides what a test does when it cannot run here.
//
// A test that needs something this machine lacks (root, a tool, a Debian
// package, a kernel feature) calls [Skip] (or one of the Need helpers) with
// the reason. On a developer's machine the test is skipped with that
// reason; under CI (the CI environment variable set to true, as GitHub
// Actions, GitLab CI and the repository's .ci/run set it) it fails with the
// same reason instead, so a CI run never passes while hiding a test that
// did not run.
//
// Three kinds of skip are deliberate and stay skips under CI (make test
// still lists them): [SkipIfShort] (go test -short), [OptIn] (a test that
// runs only when asked for) and [NotApplicable] (the test's premise does
// not hold on this machine, e.g. it checks the error for a missing
// vhost-net and this host has vhost-net).
//
// Errors are classified as the module classifies them (internal/fault): a
// missing capability or bad input (no apt-get, a package apt cannot
// download) is what this machine lacks; [SkipUnavailable] skips (fails
// under CI) on those and fails the test on any other error, so a harness
// bug behind a fetch is never mistaken for a machine that lacks something.
//
// Tests only; nothing outside _test.go files imports this package.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// CI reports whether the tests run under CI: the CI environment variable
// is a true boolean ("true", "1", ...).
func CI() bool {
	v, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && v
}

// Skip skips tb with the reason, or, under CI, fails it: the CI machine
// must provide what every test needs.
func Skip(tb testing.TB, reason string) {
	tb.Helper()
	if CI() {
		tb.Fatalf("cannot run under CI=true (it must, a CI run never skips for a missing requirement): %s", reason)
	}
	tb.Skip(reason)
}

// Skipf is Skip with a format.
func Skipf(tb testing.TB, format string, args ...any) {
	tb.Helper()
	Skip(tb, fmt.Sprintf(format, args...))
}

// NeedRoot skips (fails under CI) unless the test runs as root; why says
// what root is needed for.
func NeedRoot(tb testing.TB, why string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		Skipf(tb, "needs root (%s)", why)
	}
}

// NeedCommand returns the path of the program name on $PATH, or skips
// (fails under CI) naming it and the Debian package that has it (pkg may
// be empty).
func NeedCommand(tb testing.TB, name, pkg string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if pkg != "" {
			Skipf(tb, "needs %s (Debian package %s; make deps installs it)", name, pkg)
		}
		Skipf(tb, "needs %s on $PATH", name)
	}
	return p
}

// NeedFile skips (fails under CI) unless path exists; why says what it is.
func NeedFile(tb testing.TB, path, why string) {
	tb.Helper()
	if _, err := os.Stat(path); err != nil {
		Skipf(tb, "needs %s (%s)", path, why)
	}
}

// SkipUnavailable does nothing for a nil err. For an error that says
// something is missing (see [Unavailable]) it skips (fails under CI) with what, and the error, as the reason; any
// other error fails the test.
func SkipUnavailable(tb testing.TB, err error, what string) {
	tb.Helper()
	if err == nil {
		return
	}
	if Unavailable(err) {
		Skipf(tb, "%s: %v", what, err)
	}
	tb.Fatalf("%s: %v", what, err)
}

// Unavailable reports whether err is of class fault.ErrCapability or
// fault.ErrInput.
func Unavailable(err error) bool {
	return errors.Is(err, fault.ErrCapability) || errors.Is(err, fault.ErrInput)
}

// SkipIfShort skips tb under go test -short, also under CI (a deliberate
// choice of whoever runs the tests).
func SkipIfShort(tb testing.TB, reason string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("-short: %s", reason)
	}
}

// OptIn skips tb, also under CI, unless the environment variable env is
// "1"; how says how and why to run it.
func OptIn(tb testing.TB, env, how string) {
	tb.Helper()
	if os.Getenv(env) != "1" {
		tb.Skipf("opt-in (%s=1): %s", env, how)
	}
}

// NotApplicable skips tb, also under CI: the test's premise does not hold
// on this machine (say, it checks the error for a missing device and the
// device exists), which is not something CI should provide.
func NotApplicable(tb testing.TB, reason string) {
	tb.Helper()
	tb.Skipf("not applicable here: %s", reason)
}

// RunNoNetnsLeft runs a package's tests (m.Run) and returns the exit code
// for TestMain's os.Exit: 1 also when a test left behind a network
// namespace (/run/netns) whose name starts with prefix, the package's own
// (with this process's id, so that packages run at once do not see each
// other's).
//
//	func TestMain(m *testing.M) { os.Exit(testenv.RunNoNetnsLeft(m, nsPrefix())) }
func RunNoNetnsLeft(m *testing.M, prefix string) int {
	code := m.Run()
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			fmt.Fprintf(os.Stderr, "FAIL: netns %s left behind\n", e.Name())
			code = 1
		}
	}
	return code
}
