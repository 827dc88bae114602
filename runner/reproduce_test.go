package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// evils are texts a scenario file could hold in any string field: command
// substitutions of both kinds, parameter and arithmetic expansion, a
// command separator, a line break, and all at once. No line of
// reproduce.sh or plan may let a shell expand or run any of them.
var evils = []string{
	"x$(touch /tmp/vnb-pwn)",
	"x`touch /tmp/vnb-pwn`",
	"x${HOME}$((1+1))",
	"x;touch /tmp/vnb-pwn",
	"x\ntouch /tmp/vnb-pwn",
	"x'$(touch /tmp/vnb-pwn)'`touch /tmp/vnb-pwn`;touch /tmp/vnb-pwn",
	"x$(touch /tmp/vnb-pwn)`touch /tmp/vnb-pwn`${HOME};touch /tmp/vnb-pwn\ntouch /tmp/vnb-pwn",
}

// yamlQuote is s as a YAML double-quoted scalar.
func yamlQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// evilScenarios returns one scenario per string field, that field holding
// evil; the ones the loader accepts (it refuses most) are checked.
func evilScenarios(t *testing.T, dir, evil string) map[string]string {
	e := yamlQuote(evil)
	base := func(kernels, top, gen string) string {
		if kernels == "" {
			kernels = "kernels: [{label: running}]\n"
		}
		if gen == "" {
			gen = "generator:\n  pktgen: {mode: simple, count: 10, pkt_size: 60}\n"
		}
		return "name: evil\ndescription: evil\nbackend: tap\nguest: {vcpus: 1, memory: 512MiB}\n" + kernels + top + gen +
			"perf: {stat: {targets: [qemu], events: [task-clock]}, record: {targets: [qemu]}}\n"
	}
	tree, err := os.MkdirTemp(dir, "tree")
	if err != nil {
		t.Fatal(err)
	}
	tree = filepath.Join(tree, strings.ReplaceAll(evil, "/", "_"))
	if err := os.MkdirAll(filepath.Join(tree, "samples", "pktgen"), 0o755); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"name":                     strings.Replace(base("", "", ""), "name: evil", "name: "+e, 1),
		"description":              strings.Replace(base("", "", ""), "description: evil", "description: "+e, 1),
		"qdisc":                    base("", "qdisc: "+e+"\n", ""),
		"qdisc axis":               base("", "qdisc: [pfifo_fast, "+e+"]\n", ""),
		"tap_name":                 base("", "tap_name: "+e+"\n", ""),
		"kernel label":             base("kernels: [{label: "+e+"}]\n", "", ""),
		"kernel image":             base("kernels: [{label: k, image: "+e+"}]\n", "", ""),
		"kernel modules":           base("kernels: [{label: k, image: /boot/vmlinuz, modules: "+e+"}]\n", "", ""),
		"kernel debian":            base("kernels: [{label: k, debian: "+e+"}]\n", "", ""),
		"kernel tree":              base("kernels: [{label: k, tree: "+e+"}]\n", "", ""),
		"kernel ref":               base("kernels: [{label: k, tree: /src/linux, ref: "+e+"}]\n", "", ""),
		"kernel patches":           base("kernels: [{label: k, tree: /src/linux, patches: ["+e+"]}]\n", "", ""),
		"kernel config":            base("kernels: [{label: k, tree: /src/linux, config: "+e+"}]\n", "", ""),
		"guest cmdline":            strings.Replace(base("", "", ""), "memory: 512MiB}", "memory: 512MiB, cmdline: "+e+"}", 1),
		"pktgen dst":               base("", "", "generator:\n  pktgen: {mode: simple, dst: "+e+"}\n"),
		"pktgen dst zone":          base("", "", "generator:\n  pktgen: {mode: simple, dst: "+yamlQuote("fe80::1%"+evil)+"}\n"),
		"pktgen dst_mac":           base("", "", "generator:\n  pktgen: {mode: simple, dst_mac: "+e+"}\n"),
		"pktgen script_dir":        base("", "", "generator:\n  pktgen: {mode: script, script_dir: "+e+"}\n"),
		"pktgen script_dir exists": base("", "", "generator:\n  pktgen: {mode: script, script_dir: "+yamlQuote(tree)+"}\n"),
		"pktgen script":            base("", "", "generator:\n  pktgen: {mode: script, script_dir: /src/linux, script: "+e+"}\n"),
		"iperf3 bitrate":           base("", "", "generator:\n  iperf3: {bitrate: "+e+"}\n"),
		"trafgen rate":             base("", "", "generator:\n  trafgen: {rate: "+e+"}\n"),
		"perf events":              strings.Replace(base("", "", ""), "events: [task-clock]", "events: ["+e+"]", 1),
	}
}

// checkShell parses script with a POSIX shell parser and fails on any
// expansion or substitution in it, and on any command that is not one the
// harness writes (so a line break that escaped its quotes shows).
func checkShell(t *testing.T, what, script string) {
	t.Helper()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(script), what)
	if err != nil {
		t.Errorf("%s: not a valid shell script: %v\n%s", what, err, script)
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst, *syntax.ParamExp, *syntax.ArithmExp, *syntax.ProcSubst, *syntax.ExtGlob:
			t.Errorf("%s: expansion at %s: %q", what, n.Pos(), nodeText(script, n))
		case *syntax.CallExpr:
			if len(x.Args) > 0 {
				if w := x.Args[0].Lit(); strings.Contains(w, "touch") || strings.Contains(w, "pwn") {
					t.Errorf("%s: injected command at %s: %q", what, n.Pos(), nodeText(script, n))
				}
			}
		}
		return true
	})
}

func nodeText(script string, n syntax.Node) string {
	s, e := n.Pos().Offset(), n.End().Offset()
	if s < e && int(e) <= len(script) {
		return script[s:e]
	}
	return ""
}

func TestSafeComment(t *testing.T) {
	for in, want := range map[string]string{
		"# a\nb":        `# a\nb`,
		"# a\r\x1b[2Jb": `# a\r\x1b[2Jb`,
		"echo 'a\nb'":   "echo 'a\nb'", // a command: quoted by proc.Quote
		"#\ttab":        "#\ttab",
	} {
		if got := safeComment(in); got != want {
			t.Errorf("safeComment(%q) = %q, want %q", in, got, want)
		}
	}
}

// reproduce.sh is written through a new file renamed into place, never
// through a link planted at its name, also when a resumed run appends.
func TestWriteReproduceNoFollow(t *testing.T) {
	for _, resume := range []bool{false, true} {
		dir := t.TempDir()
		victim := filepath.Join(t.TempDir(), "victim")
		os.WriteFile(victim, []byte("untouched"), 0o644)
		if err := os.Symlink(victim, filepath.Join(dir, "reproduce.sh")); err != nil {
			t.Fatal(err)
		}
		var log strings.Builder
		r := &runState{dir: dir, id: "r", opts: Options{Resume: resume, Log: &log}, repro: &reproducer{lines: []string{"true"}}}
		r.writeReproduce()
		if b, _ := os.ReadFile(victim); string(b) != "untouched" {
			t.Errorf("resume=%v: reproduce.sh written through a link: %q", resume, b)
		}
		fi, err := os.Lstat(filepath.Join(dir, "reproduce.sh"))
		switch {
		case resume && (err != nil || fi.Mode().Type() != os.ModeSymlink || !strings.Contains(log.String(), "symbolic link")):
			t.Errorf("resume: the link was not left alone with a warning: %v, log %q", err, log.String())
		case !resume && (err != nil || !fi.Mode().IsRegular()):
			t.Errorf("reproduce.sh is not a new plain file: %v", err)
		}
	}
}
