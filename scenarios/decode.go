package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/schema"
)

// document is the whole scenario file: the scenario-level keys plus the
// cell keys.
type document struct {
	Name        string
	Description string
	Kernels     []Kernel
	Seed        int64
	PerPatch    bool
	Cell
}

func (d *document) Fields() []schema.Field {
	return append([]schema.Field{
		schema.String(&d.Name, "name", "", checkName).Auto("the file name without .yaml").
			Doc("scenario name: lowercase letters, digits, '.', '_', '-'"),
		schema.String(&d.Description, "description", "", checkLine).Doc("one line shown by vnetbench list"),
		schema.List(&d.Kernels, "kernels", maxKernels, "{label: stock}").Default([]Kernel{{Label: "running"}}, "[{label: running}]").
			Doc("kernels under test, the column axis of every table (a list of {label, image, modules, debian, tree, source, ref, patches, config, build}); every cell runs on each"),
		schema.Int(&d.Seed, "seed", schema.NoMin, schema.NoMax).Default(0).
			Doc("seed of the run-order shuffle; 0 = pick one at run time (printed, reusable with --seed)"),
		schema.Bool(&d.PerPatch, "per_patch").Default(false).
			Doc("a column per patch (run --per-patch): the last kernel with patches becomes its base and one column per prefix of its series, p1, p1-2, ..., the whole series (docs/perpatch.md)"),
	}, d.Cell.Fields()...)
}

// Limits that keep a typo (or a fuzzer) from expanding into an absurd plan.
const (
	maxFileBytes = 1 << 20
	maxCells     = 1024
	maxRuns      = 20000
	maxKernels   = 16
)

// parse parses YAML bytes into the document's top-level mapping node.
func parse(file string, data []byte) (*yaml.Node, error) {
	if len(data) > maxFileBytes {
		return nil, &Error{File: file, Msg: fmt.Sprintf("file is %d bytes; a scenario is at most %d", len(data), maxFileBytes)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: file, Msg: "empty scenario; start with name:, generator: and the axes you compare (see the scenario reference in docs/scenarios.md)"}
		}
		return nil, syntaxError(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{File: file, Line: extra.Line, Col: extra.Column, Msg: "a second YAML document (---); put one scenario per file"}
	} else if !errors.Is(err, io.EOF) {
		return nil, syntaxError(file, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if err := checkNoAliases(file, root, 0); err != nil {
		return nil, err
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, &Error{File: file, Msg: "empty scenario; start with name:, generator: and the axes you compare (see the scenario reference in docs/scenarios.md)"}
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: root.Line, Col: root.Column, Msg: fmt.Sprintf("a scenario is a mapping of keys (name:, generator:, ...), got %s", schema.Describe(root))}
	}
	return root, nil
}

var lineRE = lazyre.New(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a yaml.v3 parse error ("yaml: line 3: msg") into an
// *Error. yaml.v3 reports no column for syntax errors.
func syntaxError(file string, err error) error {
	msg := err.Error()
	if m := lineRE().FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Msg: "YAML syntax: " + m[2] + " (check indentation, a missing ':' or an unclosed quote or bracket)"}
	}
	return &Error{File: file, Msg: "YAML syntax: " + strings.TrimPrefix(msg, "yaml: ")}
}

func checkNoAliases(file string, n *yaml.Node, depth int) error {
	if depth > 64 {
		return &Error{File: file, Line: n.Line, Col: n.Column, Msg: "nesting deeper than 64 levels; a scenario is a few levels deep"}
	}
	if n.Kind == yaml.AliasNode {
		return &Error{File: file, Line: n.Line, Col: n.Column, Msg: "YAML aliases (*name) are not supported; write the value out"}
	}
	for _, c := range n.Content {
		if err := checkNoAliases(file, c, depth+1); err != nil {
			return err
		}
	}
	return nil
}

var (
	nameRE   = lazyre.New(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	labelRE  = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$`)
	debianRE = lazyre.New(`^[0-9]+\.[0-9]+(\.[0-9]+(-[0-9]+|\+deb[0-9]+)?)?$`)
	eventRE  = lazyre.New(`^[A-Za-z0-9_][A-Za-z0-9_.:/=,@-]{0,199}$`)
	ifnameRE = lazyre.New(`^[A-Za-z0-9_.-]+$`)
)

func checkName(s string) string {
	if !nameRE().MatchString(s) {
		return fmt.Sprintf("name %q: use lowercase letters, digits, '.', '_', '-' (at most 64, starting with a letter or digit)", s)
	}
	return ""
}

func checkLine(s string) string {
	if strings.ContainsAny(s, "\n\r") || len(s) > 200 {
		return "description: one line of at most 200 characters"
	}
	return ""
}

// CheckLabel checks a kernel label given outside a scenario (run
// --label): "" when it is valid, else what is wrong.
func CheckLabel(s string) string { return checkLabel(s) }

func checkLabel(s string) string {
	if !labelRE().MatchString(s) {
		return fmt.Sprintf("kernel label %q: use letters, digits, '.', '_', '-' (at most 32), e.g. stock or patched", s)
	}
	return ""
}

func checkDebian(s string) string {
	if !debianRE().MatchString(s) {
		return fmt.Sprintf("Debian kernel version %q: use MAJOR.MINOR or an ABI such as \"6.12\", \"6.12.117+deb12\" or \"6.1.0-47\"", s)
	}
	return ""
}

// sourceRE is a source: value: debian:VERSION, Debian's
// linux-source-VERSION package (runner/kbuild.DebianSource).
var sourceRE = lazyre.New(`^debian:[0-9]{1,2}\.[0-9]{1,3}$`)

func checkSource(s string) string {
	if !sourceRE().MatchString(s) {
		return fmt.Sprintf("kernel source %q: use debian:MAJOR.MINOR such as debian:6.1 (Debian's linux-source-6.1 package), or tree: a source directory", s)
	}
	return ""
}

var refRE = lazyre.New(`^[A-Za-z0-9._/@^~{}+-]{1,200}$`)

func checkRef(s string) string {
	if !refRE().MatchString(s) || strings.HasPrefix(s, "-") || strings.Contains(s, "..") {
		return fmt.Sprintf("git ref %q: give a branch, tag or commit such as net-next/main, v6.1 or 1a2b3c4d", s)
	}
	return ""
}

func checkPatchPath(s, path string) string {
	if name, ok := SeriesName(s); ok {
		if msg := checkSeries(name); msg != "" {
			return path + ": " + msg
		}
		return ""
	}
	if s == "" || strings.ContainsAny(s, "\x00\n") {
		return fmt.Sprintf("%s: bad patch path %q; give a patch file, an mbox or a glob such as ~/series/v7/*.patch", path, s)
	}
	return ""
}

func checkEvent(s, _ string) string {
	if !eventRE().MatchString(s) {
		return fmt.Sprintf("bad perf event %q; use perf list names such as cycles, task-clock or sched:sched_switch", s)
	}
	return ""
}

func checkIfname(s string) string {
	switch {
	case s == "":
		return "tap_name is empty; use a name such as vnbt0"
	case len(s) > 15:
		return fmt.Sprintf("tap_name %q is %d bytes; Linux interface names have at most 15 (IFNAMSIZ-1); use a shorter name such as vnbt0", s, len(s))
	case s == "." || s == "..":
		return fmt.Sprintf("tap_name %q is not a valid interface name; use a name such as vnbt0", s)
	case !ifnameRE().MatchString(s):
		for i, r := range s {
			if !ifnameRE().MatchString(string(r)) {
				return fmt.Sprintf("tap_name %q has %q at byte %d; use letters, digits, '-', '_', '.' such as vnbt0", s, r, i)
			}
		}
	}
	return ""
}

// Known tc qdisc kinds (iproute2 tc/q_*.c). Others are accepted when they
// look like a kind and are not a near miss of a known one.
var knownQdiscs = []string{
	"fq_codel", "noqueue", "pfifo_fast", "fq", "sfq", "pfifo", "bfifo", "pfifo_head_drop",
	"codel", "pie", "fq_pie", "cake", "red", "gred", "choke", "sfb", "tbf", "htb", "hfsc",
	"prio", "multiq", "mq", "mqprio", "netem", "drr", "qfq", "ets", "skbprio", "hhf",
	"plug", "taprio", "etf", "cbs",
}

var qdiscKindRE = lazyre.New(`^[a-z][a-z0-9_]{1,15}$`)

// checkCmdline refuses guest kernel parameters the harness sets itself
// (console, panic, vnb.*) and what a command line cannot hold.
func checkCmdline(s string) string {
	if strings.TrimSpace(s) == "" {
		return "guest.cmdline is empty; write auto for the accelerator's defaults, or the parameters you want"
	}
	if strings.ContainsAny(s, "\n\r\x00") {
		return "guest.cmdline has a line break or NUL; write the parameters on one line separated by spaces"
	}
	for _, f := range strings.Fields(s) {
		k, _, _ := strings.Cut(f, "=")
		switch {
		case strings.HasPrefix(k, "vnb."):
			return fmt.Sprintf("guest.cmdline: %s is set by the harness (the guest agent's configuration); leave it out", f)
		case k == "console" || k == "panic" || k == "oops":
			return fmt.Sprintf("guest.cmdline: %s is set by the harness (console=ttyS0 panic=-1 oops=panic: the console log and a fast failure on a crash); leave it out", f)
		}
	}
	return ""
}

func checkQdisc(s string) string {
	allowed := "(allowed: any tc qdisc kind such as fq_codel, noqueue, pfifo_fast, fq, sfq, ...)"
	if slices.Contains(knownQdiscs, s) {
		return ""
	}
	switch s {
	case "ingress", "clsact":
		return fmt.Sprintf("qdisc %q is not a root (egress) qdisc; use one such as fq_codel or noqueue", s)
	case "none", "default", "":
		return fmt.Sprintf("qdisc %q: write noqueue for no qdisc, or leave qdisc unset for the kernel's default", s)
	}
	if dym := schema.DidYouMean(s, knownQdiscs); dym != "" {
		return fmt.Sprintf("unknown qdisc %q%s %s", s, dym, allowed)
	}
	if !qdiscKindRE().MatchString(s) {
		return fmt.Sprintf("unknown qdisc %q: a tc kind is a lowercase word %s", s, allowed)
	}
	return ""
}
