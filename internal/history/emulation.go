package history

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/textsafe"
)

// commonEmulation is the emulation summary every result shares when it
// is said once for all: every point emulated, none, or none known; ""
// otherwise (each series says its own).
func commonEmulation(rs []Result) string {
	common := ""
	for i, r := range rs {
		s := Summarize(r.Points)
		if i > 0 && s != common || s == EmulatedSome || s == EmulatedUnknown && r.anyKnown() {
			return ""
		}
		common = s
	}
	return common
}

// anyKnown reports whether a point of r says whether it was emulated.
func (r *Result) anyKnown() bool {
	return slices.ContainsFunc(r.Points, func(p Point) bool { return p.Emulated != EmulationUnknown })
}

// EmulationLine says what summary (Summarize) means for a reader: for
// all series (n == 0) or for a series of n points of which labels were
// emulated and unknown were not known to be or not. It is "" for
// EmulatedNone and for "".
func EmulationLine(summary string, n, unknown int, labels []string) string {
	switch {
	case summary == EmulatedAll && n == 0:
		return results.EmulatedMark + ": every run of every series; these numbers measure the emulator, not the kernel"
	case summary == EmulatedAll:
		return results.EmulatedMark + ": every run; these numbers measure the emulator, not the kernel"
	case summary == EmulatedUnknown && n == 0:
		return "Emulation unknown: no run says whether it ran under emulation (QEMU TCG); a CSV does not, nor a run indexed before vnetbench recorded it ('vnetbench history rebuild' reads it again)"
	case summary == EmulatedUnknown:
		return fmt.Sprintf("emulation unknown for %d of %d runs (a CSV row does not say it, nor a run indexed before vnetbench recorded it; 'vnetbench history rebuild' reads a run again)", unknown, n)
	case summary == EmulatedSome:
		s := fmt.Sprintf("%s: %d of %d runs (%s); those measure the emulator, not the kernel", results.EmulatedMark, len(labels), n, shortList(labels, 5))
		if unknown > 0 {
			s += fmt.Sprintf("; %d unknown", unknown)
		}
		return s
	}
	return ""
}

// emulationLine is EmulationLine for r's points.
func (r *Result) emulationLine() string {
	var labels []string
	unknown := 0
	for _, p := range r.Points {
		switch p.Emulated {
		case Emulated:
			labels = append(labels, textsafe.OneLine(p.Label))
		case EmulationUnknown:
			unknown++
		}
	}
	return EmulationLine(Summarize(r.Points), len(r.Points), unknown, labels)
}

// shortList joins up to n of xs, saying how many more there are.
func shortList(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(" and %d more", len(xs)-n)
}

// EmulationNote says why a change point whose sides differ in emulation
// is no kernel change.
func (c ChangePoint) EmulationNote() string {
	return fmt.Sprintf("emulation differs across this change (before: %s emulated, after: %s): an environment change, not a kernel change",
		c.EmulatedBefore, c.EmulatedAfter)
}

// emulationChanged reports whether the points known to be emulated or
// not differ across a change: one side has an emulated point and the
// other none, or a not-emulated point and the other none, each side
// with one known. Unknown points (indexed before the index kept it)
// count for neither: 10 unknown and 20 emulated runs ("some") before
// 10 emulated ones ("all") are one environment.
func emulationChanged(before, after []Point) bool {
	known := func(pts []Point) (yes, no bool) {
		for _, p := range pts {
			yes = yes || p.Emulated == Emulated
			no = no || p.Emulated == NotEmulated
		}
		return yes, no
	}
	yb, nb := known(before)
	ya, na := known(after)
	return (yb || nb) && (ya || na) && (yb != ya || nb != na)
}
