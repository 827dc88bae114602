package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
)

// WriteMail renders r as the body of a netdev mail, every line within
// MaxWidth (72) columns, plain ASCII, in the order such a mail reads: what
// was run and on what (the kernels, the environment), the main table
// (Transmitted and Lost with Lost by reason; for a per-patch run, a row
// per patch), the profile deltas, the warnings that qualify the numbers,
// and the command that reproduces the run. Tables a reviewer does not
// need in a mail (the per-metric comparisons, perf stat, the harness's
// own numbers) stay in `vnetbench report`'s other formats.
func WriteMail(w io.Writer, r *Report) error {
	var b strings.Builder
	mailHeader(&b, r)
	sections := []struct {
		title string
		kinds []string
	}{
		{"", []string{KindPerPatch, KindThread, KindVersus, KindSweep, KindLatency}},
		{"Profile deltas (perf record; 0-day's perf-profile rows):", []string{KindProfile, KindPerfSyms}},
	}
	printed := map[string]bool{} // a note two tables share is printed once
	for _, sec := range sections {
		var tables []*Table
		for _, t := range r.Tables {
			if slices.Contains(sec.kinds, t.Kind) {
				tables = append(tables, t)
			}
		}
		if len(tables) == 0 {
			continue
		}
		if sec.title != "" {
			b.WriteString("\n")
			writeWrapped(&b, "", sec.title)
		}
		for _, t := range tables {
			t = mailTable(r, t)
			b.WriteString("\n")
			b.WriteString(drawTable(t, ASCII))
			refs := referencedNotes(t)
			for i, n := range t.Notes {
				switch {
				case refs[i]:
					writeWrapped(&b, noteMark(i, ASCII)+" ", n)
				case printed[n]:
				default:
					printed[n] = true
					writeWrapped(&b, "  ", n)
				}
			}
		}
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\nCaveats:\n")
		for i, wn := range r.Warnings {
			if i == maxMailWarnings {
				writeWrapped(&b, "  - ", fmt.Sprintf("%d more: vnetbench report RUN_DIR", len(r.Warnings)-i))
				break
			}
			writeWrapped(&b, "  - ", wn)
		}
	}
	writeReproduce(&b, r)
	_, err := io.WriteString(w, asciiOnly(termSafe(b.String())))
	return err
}

// maxMailWarnings bounds the caveats a mail lists.
const maxMailWarnings = 8

// mailTable is t with its column headers bare ("stock", not "stock (TCG,
// nested)"): the mail's header says once what the columns ran under, and
// the table stays within MaxWidth, with a profile's symbols cut to fit.
func mailTable(r *Report, t *Table) *Table {
	c := *t
	c.Header = slices.Clone(t.Header)
	for i, h := range c.Header {
		for _, col := range r.Columns {
			if strings.HasPrefix(h, col+" (") {
				c.Header[i] = col
			}
		}
	}
	if c.Kind == KindProfile || c.Kind == KindPerfSyms {
		cutSymbols(&c)
	}
	return &c
}

// cutSymbols shortens the one label column of a symbol table where a
// kernel symbol (native_queued_spin_lock_slowpath, 32 characters) beside
// two sides' "21.80 ±32%" would pass MaxWidth: such a symbol keeps its
// head and ends in "..", and a note says so. Other formats print it
// whole.
func cutSymbols(t *Table) {
	if len(t.Rows) == 0 || len(t.Rows[0].Labels) != 1 {
		return
	}
	vals := 1
	for j, h := range t.Header {
		w := width(asciiOnly(h))
		for _, row := range t.Rows {
			if j < len(row.Cells) {
				w = max(w, width(asciiOnly(row.Cells[j].Text)))
			}
		}
		vals += w + 3
	}
	avail := MaxWidth - vals - 3 - 1
	if avail < 8 {
		return
	}
	rows, cut := slices.Clone(t.Rows), false
	for i, row := range rows {
		if l := row.Labels[0]; width(l) > avail {
			rows[i].Labels = []string{string([]rune(l)[:avail-2]) + ".."}
			cut = true
		}
	}
	if cut {
		t.Rows = rows
		t.Notes = append(slices.Clone(t.Notes), fmt.Sprintf("symbols longer than %d characters are cut (..) to keep the mail within %d columns; report's text and HTML print them whole", avail, MaxWidth))
	}
}

// mailHeader is the mail's first paragraphs: what was compared, how the
// kernels were made, where it ran.
func mailHeader(b *strings.Builder, r *Report) {
	what := strings.Join(r.Columns, " vs ")
	if PerPatchColumns(r.Columns) {
		what = fmt.Sprintf("%s and the series patch by patch (%s)", r.Base, strings.Join(r.Columns[1:], ", "))
	}
	scenario := ""
	for _, c := range r.EnvKeys() {
		if e := r.Env[c]; e != nil && e.Scenario != "" {
			scenario = e.Scenario
			break
		}
	}
	intro := "vnetbench"
	if scenario != "" {
		intro += " " + scenario
	}
	writeWrapped(b, "", intro+": "+what+".")
	if kl := kernelLines(r); len(kl) > 0 {
		b.WriteString("\nKernels:\n")
		for _, l := range kl {
			writeWrapped(b, "  ", l)
		}
	}
	if env := envLines(r); len(env) > 0 {
		b.WriteString("\nEnvironment:\n")
		for _, l := range dedupEnv(env) {
			writeWrapped(b, "  ", l)
		}
	}
	if len(r.Emulated) > 0 {
		b.WriteString("\n")
		writeWrapped(b, "", fmt.Sprintf("%s: %s; these numbers measure the emulator, not the kernel.", results.EmulatedMark, strings.Join(r.Emulated, ", ")))
	}
}

// dedupEnv merges the environment lines of columns that ran in the same
// environment ("stock, p1, p1-2: kernel ..."): a per-patch run's columns
// share the machine and differ in the kernel's build only.
func dedupEnv(lines []string) []string {
	var order []string
	cols := map[string][]string{}
	for _, l := range lines {
		col, rest, _ := strings.Cut(l, ": ")
		if _, ok := cols[rest]; !ok {
			order = append(order, rest)
		}
		cols[rest] = append(cols[rest], col)
	}
	out := make([]string, 0, len(order))
	for _, rest := range order {
		out = append(out, strings.Join(cols[rest], ", ")+": "+rest)
	}
	return out
}

// writeReproduce writes the commands that made the report's columns:
// the one command of a run (a lab run's kernels share it), else each
// run's under the columns it made. A compare of two runs showed the
// base's alone, as if it had made both columns.
func writeReproduce(b *strings.Builder, r *Report) {
	var cmds [][]string
	var cols [][]string
	for _, c := range r.EnvKeys() {
		cmd := reproduceCommand(r.Env[c])
		if len(cmd) == 0 {
			continue
		}
		i := slices.IndexFunc(cmds, func(x []string) bool { return slices.Equal(x, cmd) })
		if i < 0 {
			i = len(cmds)
			cmds, cols = append(cmds, cmd), append(cols, nil)
		}
		cols[i] = append(cols[i], c)
	}
	if len(cmds) == 0 {
		return
	}
	b.WriteString("\nTo reproduce:\n\n")
	for i, cmd := range cmds {
		if len(cmds) > 1 {
			// A shell comment, so the block pastes; within the mail's width.
			for _, l := range wrap(oneLine(strings.Join(cols[i], ", ")), MaxWidth-4) {
				b.WriteString("  # " + l + "\n")
			}
		}
		writeCommand(b, cmd)
	}
}

// reproduceCommand is the command that made a column's run (env.json's
// command), or one rebuilt from its scenario, seed and overrides, as
// argv; nil when e says neither.
func reproduceCommand(e *Env) []string {
	if e == nil {
		return nil
	}
	if len(e.Command) > 0 {
		return e.Command
	}
	if e.Scenario == "" {
		return nil
	}
	argv := []string{"vnetbench", "run", e.Scenario}
	if e.Seed != 0 {
		argv = append(argv, "--seed", fmt.Sprint(e.Seed))
	}
	for _, s := range e.Set {
		argv = append(argv, "--set", s)
	}
	return argv
}

// writeCommand writes argv shell-quoted and indented, broken before an
// option with a backslash where the line would pass MaxWidth.
func writeCommand(b *strings.Builder, argv []string) {
	const indent = "  "
	line := indent
	for i := 0; i < len(argv); i++ {
		w := proc.Quote(argv[i : i+1])
		// An option and its value stay on one line.
		if strings.HasPrefix(argv[i], "-") && i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") {
			w += " " + proc.Quote(argv[i+1:i+2])
			i++
		}
		switch {
		case line == indent:
			line += w
		case width(line)+1+width(w)+2 > MaxWidth:
			b.WriteString(line + " \\\n")
			line = indent + "    " + w
		default:
			line += " " + w
		}
	}
	b.WriteString(line + "\n")
}
