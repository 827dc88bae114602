package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

// readmeCmd is one command README.md shows: a line of a sh code block, or
// a "$ " line of another code block with the output shown after it.
type readmeCmd struct {
	line int    // README line
	text string // as shown, without its comment
	argv []string
	// shell is set when the command uses shell syntax (&&, >, $?, ...).
	shell bool
	// output is what README shows after a "$ " command, up to the next.
	output []string
}

// readmeCommands parses the fenced code blocks of README.md.
func readmeCommands(t *testing.T, readme string) []readmeCmd {
	t.Helper()
	var cmds []readmeCmd
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		fence, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		lang := strings.TrimSpace(fence)
		start := i + 1
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
		}
		body := lines[start:i]
		switch lang {
		case "sh":
			for j := 0; j < len(body); j++ {
				text, n := strings.TrimSpace(body[j]), start+j+1
				for strings.HasSuffix(text, `\`) && j+1 < len(body) {
					j++
					text = strings.TrimSuffix(text, `\`) + " " + strings.TrimSpace(body[j])
				}
				if text == "" || strings.HasPrefix(text, "#") {
					continue
				}
				cmds = append(cmds, parseReadmeCmd(t, n, text))
			}
		case "", "text", "console":
			for j := 0; j < len(body); j++ {
				text, ok := strings.CutPrefix(body[j], "$ ")
				if !ok {
					continue
				}
				c := parseReadmeCmd(t, start+j+1, text)
				for j+1 < len(body) && !strings.HasPrefix(body[j+1], "$ ") {
					j++
					c.output = append(c.output, body[j])
				}
				cmds = append(cmds, c)
			}
		}
	}
	return cmds
}

// parseReadmeCmd splits a command line into words as sh would (quotes, a
// trailing # comment) and notes shell syntax it cannot run as argv.
func parseReadmeCmd(t *testing.T, line int, text string) readmeCmd {
	c := readmeCmd{line: line}
	var word strings.Builder
	inWord := false
	var quote rune
	flush := func() {
		if inWord {
			c.argv = append(c.argv, word.String())
			word.Reset()
			inWord = false
		}
	}
	rs := []rune(text)
	end := len(rs)
loop:
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '#' && !inWord:
			end = i
			break loop
		case r == ' ' || r == '\t':
			flush()
		case strings.ContainsRune("&|;<>`", r) || r == '$' && i+1 < len(rs) && strings.ContainsRune("?({", rs[i+1]):
			c.shell = true
			word.WriteRune(r)
			inWord = true
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Errorf("README.md:%d: unbalanced quote in %q", line, text)
	}
	flush()
	c.text = strings.TrimSpace(string(rs[:end]))
	return c
}

// notRun are README commands this test does not run, and why. Every
// other command runs, reduced where it would take minutes or change the
// machine; a new command that fits no rule fails the test.
var notRun = map[string]string{
	"echo 'deb http://deb.debian.org/debian bookworm-backports main' > /etc/apt/sources.list.d/backports.list": "adds an apt source to the machine",
	"apt-get update && apt-get install -t bookworm-backports golang-go":                                        "installs a Go toolchain on the machine",
}

// readmeFixtures are the run directories README's commands read, as they
// are in the working directory the commands run in: fixture runs (made-up
// numbers, report/testdata/README.md) under the names README uses.
var readmeFixtures = map[string]string{
	"runs/stock":   "../../report/testdata/generated/stock",
	"runs/patched": "../../report/testdata/generated/patched",
	// README's lab run (stock vs patched in one run directory): the real
	// 3-run capture README's table comes from; its `vnetbench run` is a
	// dry run here.
	"runs/lab": "../../report/testdata/real/lab-pktgen-3run-tcg",
	// docs/history.md's CSV from another tool (testdata/history/README.md).
	"bench.csv": "testdata/history/bench.csv",
	// docs/compare.md's example of issue 33: 6 runs per side, -10%.
	"six-runs-base.bench": "testdata/compare/six-runs-base.bench",
	"six-runs-new.bench":  "testdata/compare/six-runs-new.bench",
	// docs/perpatch.md's real per-patch run (its 4-thread TAP cell).
	"runs/perpatch": "../../report/testdata/real/lab-perpatch-tcg",
	// docs/compare.md's 3-run example (cmd_report_test.go's three-runs.txt).
	"runs/few-a": "../../report/testdata/generated/few-a",
	"runs/few-b": "../../report/testdata/generated/few-b",
	// docs/compare.md's --noise-from example: a history and two 3-run sides.
	"past":       "testdata/compare/noise/past",
	"base.bench": "testdata/compare/noise/base.bench",
	"drop.bench": "testdata/compare/noise/drop.bench",
}

// TestReadmeCommands runs every command README.md and docs/*.md show, as a user would
// type it: vnetbench with relative paths in a scratch working directory
// (runs/... there are fixture runs), make and go in the repository root.
// `vnetbench run` is a dry run (a real one boots VMs for minutes; the e2e
// tests run quickstart and the lab for real); make only prints its
// recipes (-n); go install only prints its commands (-n); apt-get install
// simulates (-s). A "$ " command's shown output must appear in what it
// prints, and an `echo $?` after it must show its exit code.
func TestReadmeCommands(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(docs) < 5 {
		t.Fatalf("docs/*.md: %v %v", docs, err)
	}
	total := 0
	for _, p := range append([]string{filepath.Join("..", "..", "README.md")}, docs...) {
		readme, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(filepath.Join("..", ".."), p)
		cmds := readmeCommands(t, string(readme))
		total += len(cmds)
		t.Run(strings.TrimSuffix(filepath.Base(p), ".md"), func(t *testing.T) { runDocCommands(t, name, cmds) })
	}
	if total < 20 {
		t.Fatalf("found %d commands in README.md and docs/; the parser is broken", total)
	}
}

// runDocCommands runs the commands of one file (doc names it in errors).
func runDocCommands(t *testing.T, doc string, cmds []readmeCmd) {
	bin := vnetbenchBin(t)
	// No estimates (see below), and Debian's lab kernels as fetched: the
	// docs' --kernel stock=debian:6.1 passes run's check of its kernels
	// whatever this machine's apt knows.
	cache := cachedLabKernels(t)
	work := t.TempDir()
	for dst, src := range readmeFixtures {
		copyDir(t, src, filepath.Join(work, dst))
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	lastExit := -1
	for _, c := range cmds {
		name := fmt.Sprintf("%s:%d", doc, c.line)
		if why, ok := notRun[c.text]; ok {
			t.Logf("%s: not run (%s): %s", name, why, c.text)
			continue
		}
		if len(c.argv) == 2 && c.argv[0] == "echo" && c.argv[1] == "$?" {
			if want := strings.Join(c.output, "\n"); want != strconv.Itoa(lastExit) {
				t.Errorf("%s: README shows exit code %q; the command before it exited %d", name, want, lastExit)
			}
			continue
		}
		if c.shell {
			t.Errorf("%s: %q uses shell syntax this test cannot run; run it by hand and add it to notRun with the reason", name, c.text)
			continue
		}
		argv, dir, reduced := readmeArgv(c.argv, bin, work, root)
		if argv == nil {
			t.Errorf("%s: README shows %q, which this test does not know how to run: add a rule to readmeArgv", name, c.text)
			continue
		}
		if argv[0] == "apt-get" {
			if _, err := exec.LookPath("apt-get"); err != nil {
				testenv.Skipf(t, "%s: needs apt-get to check %q", name, c.text)
			}
		}
		cmd := exec.CommandContext(t.Context(), argv[0], argv[1:]...)
		cmd.Dir = dir
		if argv[0] == bin {
			// The docs show a fresh machine's estimates: none of this
			// host's measured rates (estimates.json in the cache, which
			// make demo and every run update).
			cmd.Env = append(os.Environ(), "VNETBENCH_CACHE="+cache)
			if strings.Contains(c.text, "image=~/") || strings.Contains(c.text, "tree=~/") || strings.Contains(c.text, "patches=~/") {
				// A user's own built kernel, which run and its dry
				// run check for before anything (not booted here).
				cmd.Env = append(cmd.Env, "HOME="+builtKernelHome(t, work))
			}
		}
		restore := hideStagedRun(t, c.argv, work)
		out, err := cmd.CombinedOutput()
		restore()
		lastExit = 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			lastExit = ee.ExitCode()
		} else if err != nil {
			t.Errorf("%s: %s: %v", name, strings.Join(argv, " "), err)
			continue
		}
		t.Logf("%s: %s (exit %d, %d bytes of output)", name, strings.Join(argv, " "), lastExit, len(out))
		wantsExit := false
		for _, next := range cmds {
			if next.line > c.line && next.text == "echo $?" {
				wantsExit = next.line == c.line+len(c.output)+1
				break
			}
		}
		if lastExit != 0 && !wantsExit {
			t.Errorf("%s: %s exited %d:\n%s", name, strings.Join(argv, " "), lastExit, tail(out, 20))
		}
		if !reduced {
			checkShownOutput(t, name, c.output, out)
		}
		checkLabDirs(t, name, c.argv, out, work)
	}
}

var labLine = regexp.MustCompile(`(?m)^  (\S+): vnetbench run .* -o (\S+)`)

// checkLabDirs checks the lab VMs' inner run directories a dry run of
// `vnetbench run ... -o DIR` prints: each lab's is DIR/lab/LABEL/run,
// absolute, with DIR taken once (relative to where vnetbench ran).
func checkLabDirs(t *testing.T, name string, argv []string, out []byte, work string) {
	t.Helper()
	if len(argv) < 2 || argv[0] != "vnetbench" || argv[1] != "run" {
		return
	}
	dir := ""
	for i, a := range argv {
		if a == "-o" && i+1 < len(argv) {
			dir = argv[i+1]
		}
	}
	for _, m := range labLine.FindAllStringSubmatch(string(out), -1) {
		label, got := m[1], m[2]
		if dir == "" {
			if !filepath.IsAbs(got) {
				t.Errorf("%s: lab %s's run directory %s is not absolute", name, label, got)
			}
			continue
		}
		if want := filepath.Join(work, dir, "lab", label, "run"); got != want {
			t.Errorf("%s: lab %s's inner run goes to %s, want %s", name, label, got, want)
		}
	}
}

// hideStagedRun moves aside, until restore, the fixture run staged at
// the -o of a `vnetbench run` without --resume: it stands for what that
// run writes (for the report commands after it), and the dry run refuses
// an -o that holds a run, as run does.
func hideStagedRun(t *testing.T, argv []string, work string) (restore func()) {
	t.Helper()
	if len(argv) < 2 || argv[0] != "vnetbench" || argv[1] != "run" || slices.Contains(argv, "--resume") {
		return func() {}
	}
	i := slices.Index(argv, "-o")
	if i < 0 || i+1 >= len(argv) {
		return func() {}
	}
	dir := filepath.Join(work, argv[i+1])
	if _, err := os.Stat(dir); err != nil {
		return func() {}
	}
	aside := dir + ".staged"
	if err := os.Rename(dir, aside); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.Rename(aside, dir); err != nil {
			t.Fatal(err)
		}
	}
}

// readmeArgv is how the test runs a README command: the argv, its working
// directory and whether it is reduced (its output then differs from what
// README shows); nil for a command it has no rule for.
func readmeArgv(argv []string, bin, work, root string) (out []string, dir string, reduced bool) {
	switch argv[0] {
	case "vnetbench":
		out = append([]string{bin}, globArgs(argv[1:], work)...)
		if len(argv) > 1 && argv[1] == "run" {
			return append(out, "--dry-run"), work, true
		}
		return out, work, false
	case "make":
		return append([]string{"make", "-n"}, argv[1:]...), root, true
	case "go":
		if len(argv) > 1 && argv[1] == "install" {
			return append([]string{"go", "install", "-n"}, argv[2:]...), root, true
		}
		if len(argv) == 2 && argv[1] == "version" {
			return argv, root, true // the version differs from README's
		}
	case "apt-get":
		if len(argv) > 1 && argv[1] == "install" {
			return append([]string{"apt-get", "install", "-s"}, argv[2:]...), work, true
		}
	}
	return nil, "", false
}

// globArgs expands the words with a * in dir, as a shell would (a word
// that matches nothing stays as it is).
func globArgs(args []string, dir string) []string {
	var out []string
	for _, a := range args {
		if m, _ := filepath.Glob(filepath.Join(dir, a)); strings.Contains(a, "*") && len(m) > 0 {
			for _, p := range m {
				rel, _ := filepath.Rel(dir, p)
				out = append(out, rel)
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

// checkShownOutput checks that every line README shows after a command
// appears in its output; lines with "..." are elisions.
func checkShownOutput(t *testing.T, name string, shown []string, out []byte) {
	t.Helper()
	got := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		got[strings.TrimSpace(l)] = true
	}
	for _, l := range shown {
		l = strings.TrimSpace(l)
		if l == "" || strings.Contains(l, "...") {
			continue
		}
		if !got[l] {
			t.Errorf("%s: README shows the line %q, which the command does not print:\n%s", name, l, tail(out, 30))
		}
	}
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The parser reads what README's blocks hold: continuation lines, quotes,
// comments, shell syntax, and output after "$ " lines.
func TestReadmeCommandParser(t *testing.T) {
	md := "text\n```sh\nmake demo   # comment\nvnetbench run x \\\n    --kernel 'a=b c'\n\necho hi > /f\n```\n" +
		"```yaml\nkey: v\n```\n```\n$ vnetbench compare a b --fail-on 'x<-3%'\nline 1\n...\n$ echo $?\n1\n```\n"
	got := readmeCommands(t, md)
	want := []struct {
		line  int
		argv  []string
		shell bool
		out   []string
	}{
		{3, []string{"make", "demo"}, false, nil},
		{4, []string{"vnetbench", "run", "x", "--kernel", "a=b c"}, false, nil},
		{7, []string{"echo", "hi", ">", "/f"}, true, nil},
		{13, []string{"vnetbench", "compare", "a", "b", "--fail-on", "x<-3%"}, false, []string{"line 1", "..."}},
		{16, []string{"echo", "$?"}, true, []string{"1"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d commands %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.line != w.line || strings.Join(g.argv, "|") != strings.Join(w.argv, "|") || g.shell != w.shell || strings.Join(g.output, "|") != strings.Join(w.out, "|") {
			t.Errorf("command %d: got %+v, want %+v", i, g, w)
		}
	}
	if got[0].text != "make demo" {
		t.Errorf("comment not stripped: %q", got[0].text)
	}
}

// builtKernelHome is a home directory under work holding what docs/lab.md's
// --kernel LABEL=image=~/...,modules=~/... names: a bzImage (its header)
// and a modules directory; and what the docs' tree=~/linux and
// patches=~/... name, which run checks before it fetches or builds: the
// directory and a patch in each.
func builtKernelHome(t *testing.T, work string) string {
	t.Helper()
	home := filepath.Join(work, "home")
	img := filepath.Join(home, "linux", "arch", "x86", "boot", "bzImage")
	for _, d := range []string{filepath.Dir(img), filepath.Join(home, "mods", "lib", "modules", "6.1.0")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A bzImage's setup header and version string, all a run reads of
	// it before the lab VM boots it (vmimages.KernelRelease).
	b := make([]byte, 0x1000)
	copy(b[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(b[0x20e:], 0x400)
	copy(b[0x600:], "6.1.0 (docs@vnetbench) #1 SMP\x00")
	if err := os.WriteFile(img, b, 0o644); err != nil {
		t.Fatal(err)
	}
	writeTestPatch(t, filepath.Join(home, "series", "v7", "0001-tun-a-change.patch"))
	writeTestPatch(t, filepath.Join(home, "v2", "0001-tun-a-change.patch")) // docs/series.md's
	writeTestPatch(t, filepath.Join(home, "series", "0001-tun-a-change.patch"))
	return home
}

// writeTestPatch writes a one-line git format-patch file at path: what
// run reads of a kernel's patches before it builds.
func writeTestPatch(t *testing.T, path string) {
	t.Helper()
	const patch = "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] tun: a change\n\n---\ndiff --git a/drivers/net/tun.c b/drivers/net/tun.c\n--- a/drivers/net/tun.c\n+++ b/drivers/net/tun.c\n@@ -1 +1 @@\n-a\n+b\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
}
