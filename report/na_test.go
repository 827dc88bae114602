package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

// A configuration the kernel refused is a sample marked Unsupported: its
// cells read "n/a (reason)" in the workload's table, also when no run of
// the cell was measured anywhere, and the measured cells stay numbers.
func TestUnsupportedCells(t *testing.T) {
	const why = "zero-copy refused by tap"
	set := &results.Set{Env: map[string]*results.Env{}}
	add := func(cell, backend, kernel string, rep int, tx float64, na string) {
		s := results.Sample{Cell: cell, Kernel: kernel, Rep: rep, Start: time.Unix(int64(rep), 0), WindowS: 1,
			Axes:   map[string]string{"backend": backend, "generator": "pktgen"},
			Labels: map[string]string{"generator": "pktgen"}, Metrics: map[metric.Key]float64{}, Unsupported: na}
		if na == "" {
			s.Metrics["tx_pps"], s.Metrics["lost_pps"] = tx, 0
		}
		set.Samples = append(set.Samples, s)
	}
	for rep := range 3 {
		add("tap/pktgen-t1", "tap", "stock", rep, 450000+float64(rep), "")
		add("tap/pktgen-t1", "tap", "patched", rep, 0, why)
		add("tap+vhost/pktgen-t1", "tap+vhost", "stock", rep, 0, why)
		add("tap+vhost/pktgen-t1", "tap+vhost", "patched", rep, 0, why)
	}
	r, err := Build(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var tb *Table
	for _, x := range r.Tables {
		if x.Kind == KindThread {
			tb = x
		}
	}
	if tb == nil {
		t.Fatal("no thread table")
	}
	got := map[string][]string{}
	for _, row := range tb.Rows {
		var cells []string
		for _, c := range row.Cells[:2] {
			cells = append(cells, c.Text)
		}
		got[row.Labels[0]+" "+row.Labels[1]] = cells
	}
	na := naText(why)
	if c := got["TAP Transmitted"]; len(c) != 2 || !strings.HasSuffix(c[0], "Kpps") || c[1] != na {
		t.Errorf("TAP Transmitted %q, want [... Kpps, %s]", c, na)
	}
	if c := got["TAP + vhost-net Transmitted"]; len(c) != 2 || c[0] != na || c[1] != na {
		t.Errorf("TAP + vhost-net Transmitted %q, want n/a twice", c)
	}
	for _, row := range tb.Rows {
		if change := row.Cells[2]; change.Text != "-" || change.Delta != nil {
			t.Errorf("%v: change %q next to an n/a cell, want -", row.Labels, change.Text)
		}
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, r, ASCII); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "n/a (zero-copy refused") {
		t.Errorf("text lacks the n/a cell:\n%s", buf.String())
	}
}
