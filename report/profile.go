package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// KindProfile is a 0-day style profile delta: one perf target's symbols
// in one cell, their share of the samples on two sides (mean ± relative
// spread over the runs) and the change in percentage points, the largest
// changes first; one table for the symbols' own share (self), one for the
// share with their callees (children).
const KindProfile = "profile"

// DefaultProfileTop is Options.ProfileTop's default.
const DefaultProfileTop = 10

// profile holds one cell's symbol shares from perf report: per measure
// (self, children), target and symbol, the values of each column's runs.
type profile struct {
	vals    map[string]map[symKey]map[string][]float64 // measure -> symbol -> column -> values
	reps    map[string]map[string]int                  // measure -> column -> runs that have it
	targets []string
}

// Profile measures.
const (
	measureSelf     = "self"
	measureChildren = "children"
)

// profileKind builds the tables of KindProfile (within the perf report
// tables, KindPerfSyms): a cell's symbol shares on two columns and their
// change.
type profileKind struct{ *builder }

// profileOf collects cell's symbol shares (a module's unresolved
// addresses in one row per run, as perfSymTable).
func (b profileKind) profileOf(cell string) profile {
	p := profile{vals: map[string]map[symKey]map[string][]float64{}, reps: map[string]map[string]int{}}
	add := func(measure, col string, k symKey, v float64) {
		if p.vals[measure] == nil {
			p.vals[measure] = map[symKey]map[string][]float64{}
		}
		if p.vals[measure][k] == nil {
			p.vals[measure][k] = map[string][]float64{}
		}
		p.vals[measure][k][col] = append(p.vals[measure][k][col], v)
	}
	for _, s := range b.idx.byCell[cell] {
		if len(s.Symbols) == 0 {
			continue
		}
		self, children := map[symKey]float64{}, map[symKey]float64{}
		for _, sym := range s.Symbols {
			name, _ := sym.Row()
			k := symKey{cmp.Or(sym.Target, s.Labels["target"]), name}
			self[k] += sym.Overhead
			if sym.Children != nil {
				children[k] += *sym.Children
			}
			if !slices.Contains(p.targets, k.target) {
				p.targets = append(p.targets, k.target)
			}
		}
		for measure, m := range map[string]map[symKey]float64{measureSelf: self, measureChildren: children} {
			if len(m) == 0 {
				continue
			}
			if p.reps[measure] == nil {
				p.reps[measure] = map[string]int{}
			}
			p.reps[measure][s.Kernel]++
			for k, v := range m {
				add(measure, s.Kernel, k, v)
			}
		}
	}
	sort.Strings(p.targets)
	return p
}

// values are symbol k's shares in col's runs of measure, 0 for a run
// whose report did not list it.
func (p profile) values(measure string, k symKey, col string) []float64 {
	v := slices.Clone(p.vals[measure][k][col])
	for len(v) < p.reps[measure][col] {
		v = append(v, 0)
	}
	return v
}

// profilePair is the two columns a cell's profile deltas compare: the
// base and, of the others, the last (the whole series of a per-patch run)
// that has perf report symbols; ok is false when the base has none.
func (b profileKind) profilePair(p profile) (base, col string, ok bool) {
	base = b.r.Base
	if p.reps[measureSelf][base] == 0 {
		return "", "", false
	}
	for i := len(b.r.Columns) - 1; i >= 0; i-- {
		if c := b.r.Columns[i]; c != base && p.reps[measureSelf][c] > 0 {
			return base, c, true
		}
	}
	return "", "", false
}

// profileTables adds cell's profile deltas, self and children, per
// target (base vs col).
func (b profileKind) profileTables(cell string, p profile, base, col string) {
	for _, tg := range p.targets {
		for _, measure := range []string{measureSelf, measureChildren} {
			if p.reps[measure][base] == 0 || p.reps[measure][col] == 0 {
				continue
			}
			if t := b.profileTable(cell, tg, measure, p, base, col); len(t.Rows) > 0 {
				b.r.Tables = append(b.r.Tables, t)
			}
		}
	}
}

// profileRow is one symbol of a profile delta.
type profileRow struct {
	sym        string
	base, col  []float64
	change     float64
	meanB, mnC float64
}

// profileTable is target tg's profile delta of measure in cell.
func (b profileKind) profileTable(cell, tg, measure string, p profile, base, col string) *Table {
	var rows []profileRow
	unresolved := false
	for k := range p.vals[measure] {
		if k.target != tg {
			continue
		}
		r := profileRow{sym: k.sym, base: p.values(measure, k, base), col: p.values(measure, k, col)}
		r.meanB, r.mnC = mean(r.base), mean(r.col)
		r.change = r.mnC - r.meanB
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(x, y profileRow) int {
		return cmp.Or(-cmp.Compare(math.Abs(x.change), math.Abs(y.change)), -cmp.Compare(max(x.meanB, x.mnC), max(y.meanB, y.mnC)), cmp.Compare(x.sym, y.sym))
	})
	top := cmp.Or(b.opt.ProfileTop, DefaultProfileTop)
	if len(rows) > top {
		rows = rows[:top]
	}
	t := &Table{Kind: KindProfile, Title: fmt.Sprintf("perf-profile.%s %s %s", measure, cell, tg),
		Context:     fmt.Sprintf("perf-profile.%s, %s, target %s", measure, cell, cmp.Or(tg, "-")),
		LabelHeader: []string{"symbol"}, Header: []string{b.lab.colHeader(base), b.lab.colHeader(col), "change"}}
	for _, r := range rows {
		t.Rows = append(t.Rows, Row{Labels: []string{r.sym}, Cells: []Cell{
			profileCell(r.base, r.meanB), profileCell(r.col, r.mnC),
			{Text: fmt.Sprintf("%+.2f", r.change), Value: ptr(r.change)},
		}})
	}
	what := "the symbol's own share of the target's samples"
	if measure == measureChildren {
		what = "the share of the target's samples in the symbol and what it calls (perf report --children)"
	}
	t.Notes = append(t.Notes,
		fmt.Sprintf("%s = %s, in percent: the mean over the runs (%s: %d, %s: %d) and their relative standard deviation, as 0-day's %%stddev; a symbol missing from a run's report counts 0 there",
			measure, what, base, p.reps[measure][base], col, p.reps[measure][col]),
		fmt.Sprintf("change = %s minus %s in percentage points; the %d largest changes (--profile-top)", col, base, top))
	for _, r := range rows {
		unresolved = unresolved || strings.HasSuffix(r.sym, " unresolved")
	}
	if unresolved {
		t.Notes = append(t.Notes, unresolvedNote)
	}
	t.Notes = append(t.Notes, b.lab.nestingNotes()...)
	return t
}

// profileCell writes a side's share: "12.34 ±2%" (mean ± relative
// standard deviation; no padding, so a mail's table stays within 72
// columns with a long symbol), the mean alone for one run.
func profileCell(v []float64, m float64) Cell {
	c := Cell{Text: fmt.Sprintf("%.2f", m), Value: ptr(m)}
	if len(v) < 2 || m == 0 {
		return c
	}
	st := Summarize(v, false)
	c.Stats = &st
	c.Text += fmt.Sprintf(" ±%.0f%%", st.Stddev/m*100)
	return c
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
