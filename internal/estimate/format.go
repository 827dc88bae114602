package estimate

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/units"
)

// Duration writes d as people say it: "45 s", "12 min", "1 h", "3.5 h",
// "92 h".
func Duration(d time.Duration) string {
	switch {
	case d >= time.Hour && d < 10*time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%d h", d/time.Hour)
	case d < 90*time.Second:
		return fmt.Sprintf("%d s", int(math.Round(d.Seconds())))
	case d < 90*time.Minute:
		return fmt.Sprintf("%d min", int(math.Round(d.Minutes())))
	case d < 10*time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	}
	return fmt.Sprintf("%d h", int(math.Round(d.Hours())))
}

func fmtDur(d time.Duration) string { return Duration(d) }

func fmtRate(pps float64) string { return units.PacketRate.Format(pps) }

// Write prints the estimate: a total line, then per kernel one line per
// kind of time with the figures it used and their sources, then what
// labs side by side save (SideBySide). prefix starts
// every line ("" for plan, "vnetbench: " for run).
func (e *Estimate) Write(w io.Writer, prefix string, kernelDesc func(label string) string) {
	fmt.Fprintf(w, "%sestimate: about %s in all\n", prefix, Duration(e.Total))
	// One width for every block's first column, at least 36: a longer
	// label ("modules of drivers/net/tun.c, 2 kernels") pushed its line's
	// counts and times out of line with the others.
	width := 36
	for _, l := range e.Build {
		width = max(width, len(lineWhat(l)))
	}
	for _, k := range e.Kernels {
		for _, l := range k.Lines {
			width = max(width, len(lineWhat(l)))
		}
	}
	if len(e.Build) > 0 {
		fmt.Fprintf(w, "%s  builds, before the labs: about %s\n", prefix, Duration(e.BuildTotal))
		writeLines(w, prefix, width, e.Build)
	}
	for _, k := range e.Kernels {
		desc := k.Label
		if kernelDesc != nil {
			desc = kernelDesc(k.Label)
		}
		fmt.Fprintf(w, "%s  kernel %s: about %s\n", prefix, desc, Duration(k.Total))
		writeLines(w, prefix, width, k.Lines)
	}
	e.writeSideBySide(w, prefix)
}

// lineWhat is l's first column: what it counts, with its packets.
func lineWhat(l Line) string {
	if l.Packets > 0 {
		return l.What + " (" + units.Count(float64(l.Packets)) + " packets)"
	}
	return l.What
}

func writeLines(w io.Writer, prefix string, width int, lines []Line) {
	for _, l := range lines {
		src := ""
		if len(l.Sources) > 0 {
			src = "  [" + strings.Join(l.Sources, "; ") + "]"
		}
		fmt.Fprintf(w, "%s    %-*s x%-4d %8s%s\n", prefix, width, lineWhat(l), l.N, Duration(l.Time), src)
	}
}
