package history

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/vnetbench/vnetbench/internal/textsafe"
	"github.com/vnetbench/vnetbench/internal/units"
)

// Title names a series in one line: metric, cell, kernel label, with
// control characters and line breaks shown as escapes (textsafe.OneLine).
func (s *Series) Title() string {
	parts := []string{s.Metric}
	if s.Cell != "" {
		parts = append(parts, s.Cell)
	}
	if s.Kernel != "" {
		parts = append(parts, "kernel "+s.Kernel)
	}
	if s.Scenario != "" {
		parts = append(parts, "scenario "+s.Scenario)
	}
	return textsafe.OneLine(strings.Join(parts, " · "))
}

// Format writes v (in the series' base unit) as the report tables do:
// in the unit's scale ("452 Kpps", "941 Mbit/s", "85.0 us", "12.5%"),
// else with 3 significant digits and an SI prefix ("26.7k", "0.452").
func (s *Series) Format(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	sc := units.For(s.Unit)
	if s.Unit == "s" {
		// Latencies and jitters (rtt_p99_s, iperf3_jitter_s): "96.5
		// us", where the plain seconds' scale wrote "9.65e-05 s".
		sc = units.Latency
	}
	if !sc.IsZero() {
		return sc.Format(v)
	}
	return units.SIDigits(v, 3)
}

// Sparkline draws xs as one line of at most width block characters; a
// character stands for the median of its share of the points.
func Sparkline(xs []float64, width int) string {
	if len(xs) == 0 || width <= 0 {
		return ""
	}
	n := min(len(xs), width)
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = median(xs[i*len(xs)/n : (i+1)*len(xs)/n])
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		lo, hi = min(lo, v), max(hi, v)
	}
	const bars = "▁▂▃▄▅▆▇█"
	runes := []rune(bars)
	var b strings.Builder
	for _, v := range vals {
		k := 0
		if hi > lo {
			k = int((v - lo) / (hi - lo) * float64(len(runes)-1))
		}
		b.WriteRune(runes[k])
	}
	return b.String()
}

// WriteText writes per series a title, a sparkline with the latest
// value, whether it was measured under emulation, and its change points
// as a table. Emulation is said once, first, when every series agrees.
func WriteText(w io.Writer, rs []Result) error {
	var b bytes.Buffer
	common := commonEmulation(rs)
	if line := EmulationLine(common, 0, 0, nil); line != "" {
		fmt.Fprintf(&b, "%s\n\n", line)
	}
	for i, r := range rs {
		if i > 0 {
			b.WriteByte('\n')
		}
		xs := values(r.Points)
		noun := "points"
		if len(xs) == 1 {
			noun = "point"
		}
		fmt.Fprintf(&b, "%s: %d %s\n  %s\n", r.Title(), len(xs), noun, r.sparkLatest(xs))
		if common == "" {
			if line := r.emulationLine(); line != "" {
				fmt.Fprintf(&b, "  %s\n", line)
			}
		}
		if len(r.Changes) == 0 {
			b.WriteString("  no change points\n")
			continue
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  index\tlabel\tbefore\tafter\tchange\tp\tdirection\t")
		for _, c := range r.Changes {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%.1e\t%s\t\n", c.Index, textsafe.OneLine(c.Label), r.Format(c.Before), r.Format(c.After), pct(c.Change), c.P, c.Direction)
		}
		tw.Flush()
		for _, c := range r.Changes {
			if c.EmulationChanged {
				fmt.Fprintf(&b, "  index %d: %s\n", c.Index, c.EmulationNote())
			}
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// sparkLatest is the sparkline of xs and the latest value in the
// series' unit, with its point's label.
func (r *Result) sparkLatest(xs []float64) string {
	if len(xs) == 0 {
		return "(no values)"
	}
	last := r.Points[len(r.Points)-1]
	return fmt.Sprintf("%s  latest %s (%s)", Sparkline(xs, 60), r.Format(last.Value), textsafe.OneLine(last.Label))
}

func pct(c *float64) string {
	if c == nil {
		return units.PctFromZero // before was 0: no percentage, as report says
	}
	return fmt.Sprintf("%+.1f%%", 100**c)
}

// ErrCSV marks a CSV file that cannot be read as series.
var ErrCSV = errors.New("bad history CSV")

// ReadCSV reads series from CSV: a header row, then one row per point;
// the first column is the point's label, every other column one metric
// (its header the metric's name), an empty cell a missing value. Points
// stay in the file's order. better gives each metric's direction.
func ReadCSV(r io.Reader, name string, better func(metric string) Better) ([]Series, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCSV, name, err)
	}
	if len(rows) < 2 || len(rows[0]) < 2 {
		return nil, fmt.Errorf("%w: %s: want a header row and a row per point, with a label column and at least one metric column", ErrCSV, name)
	}
	head := rows[0]
	series := make([]Series, len(head)-1)
	seen := map[string]int{}
	for j := range series {
		// A column without a name, or a name twice, made series no
		// output could tell apart (": 2 points", "a" and "a").
		m := strings.TrimSpace(head[j+1])
		if m == "" {
			return nil, fmt.Errorf("%w: %s:1: column %d has no name; name every metric column in the header", ErrCSV, name, j+2)
		}
		if k, ok := seen[m]; ok {
			return nil, fmt.Errorf("%w: %s:1: columns %d and %d are both %q; give each metric column its own name", ErrCSV, name, k, j+2, m)
		}
		seen[m] = j + 2
		series[j] = Series{Metric: m, Better: better(m)}
	}
	for i, row := range rows[1:] {
		if len(row) > len(head) {
			return nil, fmt.Errorf("%w: %s:%d: %d columns, the header has %d", ErrCSV, name, i+2, len(row), len(head))
		}
		if strings.TrimSpace(row[0]) == "" {
			// The label is what --fail-on-new says to bisect between.
			return nil, fmt.Errorf("%w: %s:%d: no label in the first column; give each row one (a commit, a date, a run id)", ErrCSV, name, i+2)
		}
		for j := range series {
			v := math.NaN()
			if j+1 < len(row) && strings.TrimSpace(row[j+1]) != "" {
				v, err = strconv.ParseFloat(strings.TrimSpace(row[j+1]), 64)
				if err == nil && math.IsInf(v, 0) {
					// Dropped as missing, it vanished from the series
					// without a word: a producer's overflow, not a value.
					return nil, fmt.Errorf("%w: %s:%d: column %q: %q is not a finite number (leave the cell empty for a missing value)", ErrCSV, name, i+2, head[j+1], row[j+1])
				}
				if err != nil {
					return nil, fmt.Errorf("%w: %s:%d: column %q: %q is not a number (leave the cell empty for a missing value)", ErrCSV, name, i+2, head[j+1], row[j+1])
				}
			}
			series[j].Points = append(series[j].Points, Point{Label: row[0], Value: v})
		}
	}
	return series, nil
}
