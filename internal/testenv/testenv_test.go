package testenv

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// recorder is a testing.TB that records how a helper ended the test.
type recorder struct {
	testing.TB
	ended string // "fatal: msg", "skip: msg" or "" (the helper returned)
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.ended = "fatal: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skip(args ...any) {
	r.ended = "skip: " + fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.ended = "skip: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// outcome runs f on a recorder, as a test body would run.
func outcome(f func(tb testing.TB)) string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.ended
}

func TestSkipFailsUnderCI(t *testing.T) {
	missing := func(tb testing.TB) { Skip(tb, "no widget") }
	unavailable := func(tb testing.TB) {
		SkipUnavailable(tb, fmt.Errorf("fetch: %w", fault.Capability("no apt-get")), "widget")
	}
	for _, tc := range []struct {
		ci         string
		f          func(testing.TB)
		wantPrefix string
	}{
		{"", missing, "skip: no widget"},
		{"false", missing, "skip: no widget"},
		{"true", missing, "fatal: cannot run under CI=true"},
		{"1", missing, "fatal: cannot run under CI=true"},
		{"", unavailable, "skip: widget: fetch: no apt-get"},
		{"true", unavailable, "fatal: cannot run under CI=true (it must, a CI run never skips for a missing requirement): widget: fetch: no apt-get"},
		// Any other error is a failure everywhere: a harness bug is not a
		// machine that lacks something.
		{"", func(tb testing.TB) { SkipUnavailable(tb, errors.New("unpack: bad header"), "widget") }, "fatal: widget: unpack: bad header"},
		{"", func(tb testing.TB) { SkipUnavailable(tb, errors.New("exit 1"), "widget") }, "fatal: widget: exit 1"},
		{"", func(tb testing.TB) {
			SkipUnavailable(tb, fmt.Errorf("fetch: %w", &fault.CapabilityError{Msg: "apt-get not found"}), "widget")
		}, "skip: widget: fetch: apt-get not found"},
		{"", func(tb testing.TB) { SkipUnavailable(tb, &fault.InputError{Msg: "no such package"}, "widget") }, "skip: widget: no such package"},
		{"true", func(tb testing.TB) { SkipUnavailable(tb, nil, "widget") }, ""},
		// Deliberate skips stay skips under CI.
		{"true", func(tb testing.TB) { NotApplicable(tb, "has vhost-net") }, "skip: not applicable here: has vhost-net"},
		{"true", func(tb testing.TB) { OptIn(tb, "VNB_TESTENV_NOT_SET", "slow") }, "skip: opt-in (VNB_TESTENV_NOT_SET=1): slow"},
		{"true", func(tb testing.TB) { NeedCommand(tb, "vnb-no-such-program", "vnb-pkg") }, "fatal: cannot run under CI=true (it must, a CI run never skips for a missing requirement): needs vnb-no-such-program (Debian package vnb-pkg; make deps installs it)"},
		{"", func(tb testing.TB) { NeedFile(tb, "/nonexistent/vnb", "a test file") }, "skip: needs /nonexistent/vnb (a test file)"},
	} {
		t.Setenv("CI", tc.ci)
		got := outcome(tc.f)
		if !strings.HasPrefix(got, tc.wantPrefix) || (tc.wantPrefix == "" && got != "") {
			t.Errorf("CI=%q: got %q, want %q...", tc.ci, got, tc.wantPrefix)
		}
	}
}

func TestOptInAndNeedCommandPass(t *testing.T) {
	t.Setenv("CI", "true")
	t.Setenv("VNB_TESTENV_OPTIN", "1")
	if got := outcome(func(tb testing.TB) { OptIn(tb, "VNB_TESTENV_OPTIN", "slow") }); got != "" {
		t.Errorf("opted in: %q", got)
	}
	var p string
	if got := outcome(func(tb testing.TB) { p = NeedCommand(tb, "go", "golang") }); got != "" || p == "" {
		t.Errorf("NeedCommand(go) = %q, ended %q", p, got)
	}
}
