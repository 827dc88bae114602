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
// cells read "n/a" in the workload's table with the reason as a numbered
// note, also when no run of the cell was measured anywhere, and the
// measured cells stay numbers. The reason is xdp_redirect's on a tun
// without ndo_xdp_xmit: written in the cell, it made the mail's table 96
// columns wide.
func TestUnsupportedCells(t *testing.T) {
	const why = "this kernel's devmap refuses the tap (operation not supported): tun has no ndo_xdp_xmit here"
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
			cells = append(cells, c.Text+noteRefs(tb, c))
		}
		got[row.Labels[0]+" "+row.Labels[1]] = cells
	}
	na := "n/a[n/a: " + why + "]"
	if c := got["TAP Transmitted"]; len(c) != 2 || !strings.HasSuffix(c[0], "Kpps") || c[1] != na {
		t.Errorf("TAP Transmitted %q, want [... Kpps, %s]", c, na)
	}
	if c := got["TAP + vhost-net Transmitted"]; len(c) != 2 || c[0] != na || c[1] != na {
		t.Errorf("TAP + vhost-net Transmitted %q, want %s twice", c, na)
	}
	if n := strings.Count(strings.Join(tb.Notes, "\n"), why); n != 1 {
		t.Errorf("the reason is in %d notes, want 1: %q", n, tb.Notes)
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
	for _, want := range []string{"| n/a (1) |", "(1) n/a: this kernel's devmap refuses the tap"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	if err := WriteMail(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(buf.String(), "\n") {
		if w := width(l); w > MaxWidth {
			t.Errorf("mail line %d columns wide: %q", w, l)
		}
	}
}

// noteRefs is cell c's notes of table tb as "[note]..." ("" for none).
func noteRefs(tb *Table, c Cell) string {
	var b strings.Builder
	for _, n := range c.Notes {
		b.WriteString("[" + tb.Notes[n] + "]")
	}
	return b.String()
}

// A cell one kernel refused and the other measured has the measured
// kernel's rows: the real 3-run lab capture with patched's 1-thread TAP
// cell refused reads n/a beside stock's Transmitted, Lost and CPU/pkt
// kpktgend, and gets no CPU/pkt vhost row, which only TAP + vhost-net
// has (before, the n/a made one: "- | n/a").
func TestUnsupportedBesideMeasured(t *testing.T) {
	const why = "pktgen: Operation not supported"
	set := loadSet(t, "lab-pktgen-3run-tcg")
	for i := range set.Samples {
		if s := &set.Samples[i]; s.Kernel == "patched" && s.Cell == "tap/pktgen-t1/fq_codel" {
			s.Metrics, s.Threads, s.Unsupported = map[metric.Key]float64{}, nil, why
		}
	}
	r, err := Build(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var tb *Table
	for _, x := range r.Tables {
		if x.Kind == KindThread && strings.Contains(x.Context, "1 thread") {
			tb = x
		}
	}
	if tb == nil {
		t.Fatal("no 1-thread table")
	}
	var tap []string
	for _, row := range tb.Rows {
		if row.Labels[0] == "TAP" {
			tap = append(tap, row.Labels[1]+": "+row.Cells[1].Text+noteRefs(tb, row.Cells[1])+" | "+row.Cells[2].Text)
		}
	}
	na := "n/a[n/a: " + why + "] | -"
	want := []string{"Transmitted: " + na, "Lost: " + na, "CPU/pkt kpktgend: " + na}
	if strings.Join(tap, "\n") != strings.Join(want, "\n") {
		t.Errorf("TAP rows (patched | change):\n%s\nwant:\n%s", strings.Join(tap, "\n"), strings.Join(want, "\n"))
	}
}
