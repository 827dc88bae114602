package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/internal/textsafe"
	"github.com/vnetbench/vnetbench/report"
)

// listFlag is a repeatable, comma-separated string list flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// cmdReport renders run directories or benchfmt files.
func cmdReport(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", "RUN_DIR|BENCHFMT_FILE... [flags]", stderr)
	format := fs.String("format", "", "output format: "+strings.Join(report.Formats, "|")+" (default text, or from -o's extension)")
	by := fs.String("by", "kernel", "column axis: kernel, or a cell axis such as backend or qdisc")
	style := fs.String("style", "ascii", "text table borders: ascii (+---+, for mail) or unicode")
	out := pathFlag(fs, "o", "write to `FILE` instead of stdout (- for stdout)")
	base := fs.String("base", "", "column the others are compared with (default the first)")
	alpha := retiredAlpha(fs)
	minEffect := fs.String("min-effect", report.DefaultMinEffect.String(), "smallest change that matters for the change columns' SAME (\"2%\" or \"0.5iqr\")")
	top := fs.Int("top", 10, "perf report symbols shown per target")
	profileTop := fs.Int("profile-top", report.DefaultProfileTop, "symbols per profile delta (two columns with perf record: the largest changes of each side's share, self and children)")
	origin := fs.String("origin", "", "--format kcidb: the submitting CI system's `NAME` in KCIDB ([a-z0-9_]+), the prefix of every id")
	details := fs.Bool("details", false, "text/markdown: also the per-metric tables (shown anyway when comparing) and the harness and diagnostics table")
	var metrics listFlag
	fs.Var(&metrics, "metric", "restrict the tables to these metrics (repeatable, comma-separated)")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := alpha.check("report"); err != nil {
		return err
	}
	if err := checkSymbolCounts(fs, "top", "profile-top"); err != nil {
		return err
	}
	if len(paths) == 0 {
		fs.Usage()
		return usageErrorf("report: no run directories given; e.g. vnetbench report runs/stock runs/patched")
	}
	f, err := report.OutputFormat("report", *format, *out, report.Formats)
	if err != nil {
		return err
	}
	if err := checkOutputDir(*out); err != nil {
		return err
	}
	if f == "kcidb" {
		if err := report.CheckOrigin(*origin); err != nil {
			return err
		}
	} else if given(fs, "origin") {
		return usageErrorf("report: --origin names the submitting CI system of --format kcidb, and the format is %s; add --format kcidb or leave --origin out", f)
	}
	st, err := report.ParseStyle(*style)
	if err != nil {
		return err
	}
	set, err := results.Load(absPaths(paths)...)
	if err != nil {
		return err
	}
	me, err := report.ParseMinEffect(*minEffect)
	if err != nil {
		return usageErrorf("report: --min-effect: %v", err)
	}
	r, err := report.Build(set, report.Options{By: *by, Base: *base, MinEffect: me, Top: *top, ProfileTop: *profileTop, Metrics: metrics, Details: *details, Origin: *origin})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := report.Render(&buf, set, r, f, st); err != nil {
		return err
	}
	for _, w := range set.Warnings {
		fmt.Fprintf(stderr, "vnetbench: warning: %s\n", textsafe.Terminal(w))
	}
	return writeOutput(*out, buf.Bytes(), stdout)
}

// writeOutput writes data to path atomically (a link at path is
// replaced, not followed), or to stdout when path is empty or "-".
func writeOutput(path string, data []byte, stdout io.Writer) error {
	if path == "" || path == "-" {
		_, err := stdout.Write(data)
		return err
	}
	return writeUnder(filepath.Dir(path), filepath.Base(path), data)
}

// checkOutputDir refuses, before any work, an output file (-o, --junit)
// whose directory is not there: compare printed its whole comparison and
// only then failed to write the JUnit file, exit 2 in place of the
// gates' exit code. An output that is a directory is refused too: the
// write failed at the end, exit 1 (compare's regression). "" and "-"
// (stdout) pass.
func checkOutputDir(path string) error {
	if path == "" || path == "-" {
		return nil
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fault.Input("write %s: directory %s does not exist; write to a directory that exists and you may write to", path, dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fault.Input("write %s: it is a directory; give the name of a file (in it, or elsewhere)", path)
	}
	return nil
}

// writeUnder writes the file name of the directory dir whole, through
// safefs: no link at name or on its way is followed. A directory it
// cannot open is the user's path, bad input (exit 2): exit 1 is a
// measured failure or, from compare, a regression.
func writeUnder(dir, name string, data []byte) error {
	d, err := safefs.Open(dir)
	if err != nil {
		return fault.Input("write %s: %w; write to a directory that exists and you may write to", filepath.Join(dir, name), err)
	}
	defer d.Close()
	return d.WriteFile(name, data, 0o644)
}
