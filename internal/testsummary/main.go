// Command testsummary runs go test commands with -json and prints what go
// test prints without -v (the ok, FAIL and "?" line of every package, the
// full output of every failing test), then the slowest tests (where a CI
// run's time went) and a list of every skipped test with its reason, so a
// reader of a CI log sees what did not run.
//
//	go run ./internal/testsummary [-v] -- go test -json PKGS... [-- go test -json PKGS...]
//
// Each "--" starts a command (argv, run without a shell, one after the
// other; with -j all at once, their output interleaved by line). -v
// prints every line as go test -v would. The exit status is 1 when a
// command fails or any test or package fails (2 on bad usage); a failed
// command is named in the failure list, and with more than one command
// each one's wall time is printed.
// Non-JSON lines on a command's stdout are passed through.
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testsummary", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verbose := fs.Bool("v", false, "print every line of go test's output (as go test -v)")
	parallel := fs.Bool("j", false, "run the commands at once instead of one after the other")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cmds := splitCommands(args[len(args)-fs.NArg():])
	if len(cmds) == 0 {
		fmt.Fprintln(stderr, "testsummary: no command; usage: testsummary [-v] [-j] -- go test -json PKGS... [-- CMD...]")
		return 2
	}
	// A command of ours that runs testsummary again (make -n executes a
	// recipe naming $(MAKE); a test that dry-runs make test) would run
	// every test inside a test, and again inside that: refuse at once.
	if os.Getenv(nestedEnv) != "" {
		fmt.Fprintf(stderr, "testsummary: started by a command of another testsummary (%s is set): refusing to run the tests inside the tests; a Makefile recipe that make -n executes (one naming $(MAKE)) is the usual cause\n", nestedEnv)
		return 2
	}
	s := newSummary(stdout, *verbose)
	stderr = &lockedWriter{w: stderr} // the commands' stderr, written at once under -j
	one := func(argv []string) {
		start := time.Now()
		err := runOne(ctx, argv, s, stderr)
		s.ended(argv, time.Since(start), err)
	}
	if *parallel {
		var wg sync.WaitGroup
		for _, argv := range cmds {
			wg.Add(1)
			go func() { defer wg.Done(); one(argv) }()
		}
		wg.Wait()
	} else {
		for _, argv := range cmds {
			one(argv)
			if ctx.Err() != nil {
				break
			}
		}
	}
	if s.finish() {
		return 1
	}
	return 0
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// shortArgv is a command's first words and its last: the go test
// commands' package lists are long, and make test's commands that start
// alike (nice -n 10 make ...) differ in their last word.
func shortArgv(argv []string) string {
	const words = 4
	if len(argv) > words+1 {
		return strings.Join(argv[:words], " ") + " ... " + argv[len(argv)-1]
	}
	return strings.Join(argv, " ")
}

// splitCommands splits args at each "--" (a leading one is optional).
func splitCommands(args []string) [][]string {
	var cmds [][]string
	var cur []string
	for _, a := range args {
		if a == "--" {
			if len(cur) > 0 {
				cmds = append(cmds, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, a)
	}
	if len(cur) > 0 {
		cmds = append(cmds, cur)
	}
	return cmds
}

// nestedEnv is set in the commands' environment: see run.
const nestedEnv = "VNETBENCH_TESTSUMMARY"

func runOne(ctx context.Context, argv []string, s *summary, stderr io.Writer) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), nestedEnv+"=1")
	cmd.Stderr = stderr
	// go test stops its test binaries on SIGINT itself; give it that
	// chance and its output, instead of killing it outright.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.read(out)
	return cmd.Wait()
}

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	Elapsed    float64   // seconds, on a test's pass, fail or skip
	ImportPath string    // build-output events
	Time       time.Time // when test2json saw the line (zero on build events)
}

type skip struct {
	pkg, test, reason string
}

// timing is how long a top-level test (or, with test "", a package)
// took, and when it ran: from and to in seconds after testsummary
// started (both 0 when go test gave no times).
type timing struct {
	pkg, test string
	seconds   float64
	from, to  float64
}

// when is the span of a timing as "from-to s": where on a CI run's
// timeline a slow test sat (waiting for another command, or on its
// critical path).
func (t timing) when() string {
	if t.to == 0 {
		return ""
	}
	return fmt.Sprintf(" (%.0f-%.0f s)", t.from, t.to)
}

// slowestShown and slowestMin bound the slowest-tests list: at most that
// many tests, each of at least that many seconds.
const (
	slowestShown = 10
	slowestMin   = 1.0
)

// test is one (sub)test of a top-level test still running: its output is
// kept until the top-level test ends, then printed if anything in it
// failed.
type test struct {
	pkg, name string
	logs      []string // output lines but the === and --- ones
	result    string   // the "--- FAIL: ..." line, once ended
	failed    bool
}

type summary struct {
	mu      sync.Mutex // commands run at once (-j) share the summary
	w       io.Writer
	verbose bool
	running []*test // in start order
	skips   []skip
	times   []timing // top-level tests that ended
	pkgs    []timing // packages that ended, with their spans
	start   time.Time
	began   map[string]time.Time // package (and "pkg test") -> its first event
	pkgMin  float64              // packagesMin but in tests
	failed  []string             // "pkg TestX" or "pkg" (the package itself)
	anyFail bool
	cmds    []string // "command ... took N s", one per command run
}

// ended records a command's end: its wall time for the summary, and a
// failure for a command that failed (make check's findings, a go test
// that could not start; a go test's failed tests are listed by name too).
func (s *summary) ended(argv []string, d time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := "ok"
	if err != nil {
		res = err.Error()
		s.anyFail = true
		s.failed = append(s.failed, "command "+shortArgv(argv)+": "+res)
	}
	s.cmds = append(s.cmds, fmt.Sprintf("%6.0fs %s (%s)", d.Seconds(), shortArgv(argv), res))
}

func newSummary(w io.Writer, verbose bool) *summary {
	return &summary{w: w, verbose: verbose, start: time.Now(), began: map[string]time.Time{}, pkgMin: packagesMin}
}

func (s *summary) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		s.mu.Lock()
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil || ev.Action == "" {
			fmt.Fprintf(s.w, "%s\n", line)
		} else {
			s.event(ev)
		}
		s.mu.Unlock()
	}
	if err := sc.Err(); err != nil {
		s.mu.Lock()
		fmt.Fprintf(s.w, "testsummary: reading go test's output: %v\n", err)
		s.anyFail = true
		s.mu.Unlock()
	}
}

func (s *summary) event(ev event) {
	if !ev.Time.IsZero() && ev.Package != "" {
		key := ev.Package + " " + ev.Test
		if _, ok := s.began[key]; !ok {
			s.began[key] = ev.Time
		}
	}
	if s.verbose && ev.Output != "" {
		io.WriteString(s.w, ev.Output)
	}
	switch {
	case ev.Action == "build-output":
		if !s.verbose {
			io.WriteString(s.w, ev.Output)
		}
	case ev.Action == "build-fail":
		s.anyFail = true
		s.failed = append(s.failed, ev.ImportPath+" [build failed]")
	case ev.Test == "":
		s.packageEvent(ev)
	default:
		s.testEvent(ev)
	}
}

func (s *summary) packageEvent(ev event) {
	switch ev.Action {
	case "pass", "fail", "skip":
		s.pkgs = append(s.pkgs, s.timed(ev))
	}
	switch ev.Action {
	case "output":
		// Without -v a passing package prints only its "ok" line.
		if !s.verbose && ev.Output != "PASS\n" && !strings.HasPrefix(ev.Output, "=== ") {
			io.WriteString(s.w, ev.Output)
		}
	case "fail":
		s.anyFail = true
		// Tests still running when the package failed (a timeout, a
		// panic in another goroutine): their output says where.
		if !s.verbose {
			for _, t := range s.running {
				if t.pkg == ev.Package {
					s.print(t, "")
				}
			}
		}
		s.running = slices.DeleteFunc(s.running, func(t *test) bool { return t.pkg == ev.Package })
		s.failed = append(s.failed, ev.Package)
	}
}

func (s *summary) testEvent(ev event) {
	var t *test
	for _, r := range s.running {
		if r.pkg == ev.Package && r.name == ev.Test {
			t = r
		}
	}
	if t == nil {
		t = &test{pkg: ev.Package, name: ev.Test}
		s.running = append(s.running, t)
	}
	switch ev.Action {
	case "output":
		l := strings.TrimLeft(ev.Output, " ")
		switch {
		case strings.HasPrefix(l, "=== "):
		case strings.HasPrefix(l, "--- "):
			t.result = l
		default:
			t.logs = append(t.logs, ev.Output)
		}
		return
	case "pass", "fail", "skip":
	default:
		return
	}
	if ev.Action == "fail" {
		t.failed = true
		s.anyFail = true
		s.failed = append(s.failed, ev.Package+" "+ev.Test)
	}
	if ev.Action == "skip" {
		s.skips = append(s.skips, skip{ev.Package, ev.Test, skipReason(t.logs)})
	}
	if strings.Contains(ev.Test, "/") {
		return // kept for its top-level test
	}
	s.times = append(s.times, s.timed(ev))
	// A top-level test ended: print it as go test does without -v (each
	// failed (sub)test's --- FAIL line and output, indented by depth).
	prefix := ev.Test + "/"
	in := func(t *test) bool {
		return t.pkg == ev.Package && (t.name == ev.Test || strings.HasPrefix(t.name, prefix))
	}
	if !s.verbose {
		for _, t := range s.running {
			if in(t) && t.failed {
				s.print(t, strings.Repeat("    ", strings.Count(t.name, "/")))
			}
		}
	}
	s.running = slices.DeleteFunc(s.running, in)
}

// timed is the timing of the test or package whose end ev is.
func (s *summary) timed(ev event) timing {
	t := timing{pkg: ev.Package, test: ev.Test, seconds: ev.Elapsed}
	if b, ok := s.began[ev.Package+" "+ev.Test]; ok && !ev.Time.IsZero() {
		t.from, t.to = b.Sub(s.start).Seconds(), ev.Time.Sub(s.start).Seconds()
	}
	return t
}

func (s *summary) print(t *test, indent string) {
	if t.result != "" {
		io.WriteString(s.w, indent+t.result)
	}
	for _, l := range t.logs {
		io.WriteString(s.w, indent+l)
	}
}

// skipReason is what the test logged before it was skipped: the t.Skip
// message (with its file:line) and any t.Log lines before it, joined.
func skipReason(lines []string) string {
	var parts []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " / ")
}

// packagesMin bounds the package timeline (summary.pkgMin): packages
// that took at least that many seconds.
const packagesMin = 30.0

// printPackages prints the packages of packagesMin seconds or more in
// the order they ended, each with its span: with commands run at once
// (-j), which one's end a run's wall time waited for, and what ran
// beside it.
func (s *summary) printPackages() {
	long := slices.DeleteFunc(slices.Clone(s.pkgs), func(t timing) bool { return t.seconds < s.pkgMin || t.to == 0 })
	if len(long) == 0 {
		return
	}
	slices.SortStableFunc(long, func(a, b timing) int { return cmp.Compare(a.to, b.to) })
	fmt.Fprintf(s.w, "\npackages by end (%g s or more; from-to: seconds after the start):\n", s.pkgMin)
	for _, t := range long {
		fmt.Fprintf(s.w, "  %7.1fs %s%s\n", t.seconds, t.pkg, t.when())
	}
}

// finish prints the skip list and the failures; it reports whether
// anything failed.
func (s *summary) finish() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cmds) > 1 {
		fmt.Fprintf(s.w, "\ncommands (wall time):\n")
		for _, c := range s.cmds {
			fmt.Fprintf(s.w, "  %s\n", c)
		}
	}
	slow := slices.DeleteFunc(slices.Clone(s.times), func(t timing) bool { return t.seconds < slowestMin })
	slices.SortStableFunc(slow, func(a, b timing) int { return cmp.Compare(b.seconds, a.seconds) })
	if len(slow) > slowestShown {
		slow = slow[:slowestShown]
	}
	if len(slow) > 0 {
		fmt.Fprintf(s.w, "\nslowest tests (of %d, %d s or more; from-to: seconds after the start):\n", len(s.times), int(slowestMin))
		for _, t := range slow {
			fmt.Fprintf(s.w, "  %7.1fs %s %s%s\n", t.seconds, t.pkg, t.test, t.when())
		}
	}
	s.printPackages()
	fmt.Fprintf(s.w, "\n%d skipped test(s)", len(s.skips))
	if len(s.skips) > 0 {
		fmt.Fprint(s.w, ":")
	}
	fmt.Fprintln(s.w)
	for _, sk := range s.skips {
		fmt.Fprintf(s.w, "  SKIP %s %s: %s\n", sk.pkg, sk.test, sk.reason)
	}
	if len(s.failed) > 0 {
		fmt.Fprintf(s.w, "%d failure(s):\n", len(s.failed))
		for _, f := range s.failed {
			fmt.Fprintf(s.w, "  FAIL %s\n", f)
		}
	}
	return s.anyFail || len(s.failed) > 0
}
