package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/results"
)

// lavaBad matches what a LAVA test case name, measurement unit or
// reference may not hold: LAVA's lava-test-case splits on spaces, and its
// result parser keeps names to letters, digits and ._- (a conservative
// reading; LAVA's server accepts a few more).
var lavaBad = lazyre.New(`[^A-Za-z0-9._-]+`)

// LAVAName sanitizes s into a LAVA test case name: runs of characters
// outside [A-Za-z0-9._-] become "_".
func LAVAName(s string) string {
	return strings.Trim(lavaBad().ReplaceAllString(s, "_"), "_")
}

// WriteLAVA writes one lava-test-case line per cell and metric (and per
// column when the report has several): the median as the measurement,
// the metric's unit as the units (a shell comment first when a column
// ran under emulation); a sample that failed to measure is a
// line with --result fail. A LAVA test definition runs the output as a
// shell script (or eval's its lines) inside the job, so every name,
// label and unit goes through LAVAName: nothing from a run reaches the
// shell but letters, digits and ._-.
func WriteLAVA(w io.Writer, r *Report, failed []FailedCell) error {
	var b strings.Builder
	multi := len(r.Columns) > 1
	if len(r.Emulated) > 0 {
		cols := make([]string, len(r.Emulated))
		for i, c := range r.Emulated {
			cols[i] = LAVAName(c) // as the case names spell it
		}
		fmt.Fprintf(&b, "# %s: %s; these numbers measure the emulator, not the kernel\n", results.EmulatedMark, strings.Join(cols, ", "))
	}
	for _, s := range r.Summaries {
		v := s.Stats.Median
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		name := s.Cell + "." + s.Metric
		if multi {
			name = s.Column + "." + name
		}
		unit := LAVAName(s.Unit)
		if unit == "" {
			unit = "none"
		}
		fmt.Fprintf(&b, "lava-test-case %s --result pass --measurement %s --units %s\n",
			LAVAName(name), strconv.FormatFloat(v, 'f', -1, 64), unit)
	}
	for _, f := range failed {
		name := f.Cell + ".rep" + strconv.Itoa(f.Rep+1)
		if multi {
			name = f.Column + "." + name
		}
		fmt.Fprintf(&b, "lava-test-case %s --result fail\n", LAVAName(name))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
