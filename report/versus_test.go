package report

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// versusSet is the AF_XDP series' experiment in samples: 64 and 1024 B,
// copy and zero-copy, on a stock kernel (zero-copy refused) and a
// patched one, 3 runs each, with the CPU per packet of the sender and
// the vhost worker.
func versusSet() *results.Set {
	set := &results.Set{Env: map[string]*results.Env{"stock": {CPUModel: "Intel(R) Xeon(R) CPU E5-2620 v4 @ 2.10GHz"},
		"patched": {CPUModel: "Intel(R) Xeon(R) CPU E5-2620 v4 @ 2.10GHz"}}}
	const na = "unsupported (EOPNOTSUPP: this kernel's tun has no AF_XDP zero-copy)"
	mpps := map[string]float64{"64/copy": 2.5e6, "64/zerocopy": 4.0e6, "1024/copy": 1.9e6, "1024/zerocopy": 3.3e6}
	for _, k := range []string{"stock", "patched"} {
		for _, size := range []string{"1024", "64"} { // out of order: rows sort by size
			for _, mode := range []string{"copy", "zerocopy"} {
				for rep := range 3 {
					s := results.Sample{Cell: "tap+vhost/afxdp-t1/pkt" + size + "/" + mode, Kernel: k, Rep: rep,
						Start: time.Unix(int64(rep), 0), WindowS: 5,
						Axes: map[string]string{"backend": "tap+vhost", "generator": "afxdp", "generator.afxdp.pkt_size": size,
							"generator.afxdp.mode": mode, "generator.afxdp.threads": "1"},
						Labels: map[string]string{"generator": "afxdp"}, Metrics: map[metric.Key]float64{}}
					if k == "stock" && mode == "zerocopy" {
						s.Unsupported = na
					} else {
						tx := mpps[size+"/"+mode] * (1 + 0.01*float64(rep))
						s.Metrics["tx_pps"], s.Metrics["lost_pps"], s.Metrics["rx_pps"] = tx, 0, tx*0.98
						s.Metrics["cpu_per_pkt.afxdp"] = 1e9 / tx
						s.Metrics["cpu_per_pkt.vhost"] = 0.8e9 / tx
					}
					set.Samples = append(set.Samples, s)
				}
			}
		}
	}
	return set
}

// The series' table: per kernel, UDP sizes as row groups in numeric
// order, copy | zero-copy | speedup from the medians, Mpps from 1 Mpps,
// the refused zero-copy n/a with its reason as a footnote; no thread
// table for these samples.
func TestVersusTable(t *testing.T) {
	r, err := Build(versusSet(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var vs []*Table
	for _, x := range r.Tables {
		switch x.Kind {
		case KindVersus:
			vs = append(vs, x)
		case KindThread:
			t.Errorf("a thread table for Versus samples: %s", x.Title)
		}
	}
	if len(vs) != 2 {
		t.Fatalf("%d versus tables, want one per kernel", len(vs))
	}
	stock, patched := vs[0], vs[1]
	if !strings.HasSuffix(stock.Context, "kernel stock") || !strings.HasSuffix(patched.Context, "kernel patched") {
		t.Errorf("contexts %q, %q", stock.Context, patched.Context)
	}
	if h := strings.Join(patched.Header, "|"); h != "copy|zero-copy|speedup" {
		t.Errorf("header %q", h)
	}
	cells := func(tb *Table, group, metric string) []string {
		for _, row := range tb.Rows {
			if row.Labels[0] == group && row.Labels[1] == metric {
				var out []string
				for _, c := range row.Cells {
					txt := c.Text
					for _, n := range c.Notes {
						txt += fmt.Sprintf("[%s]", tb.Notes[n])
					}
					out = append(out, txt)
				}
				return out
			}
		}
		t.Fatalf("no row %s %s in %s", group, metric, tb.Title)
		return nil
	}
	if got := strings.Join(cells(patched, "UDP 64", "Transmitted"), "|"); got != "2.52 Mpps|4.04 Mpps|+60.00%" {
		t.Errorf("patched 64 Transmitted %q", got)
	}
	if got := strings.Join(cells(patched, "UDP 1024", "CPU/pkt vhost"), "|"); got != "417 ns|240 ns|-42.42%" {
		t.Errorf("patched 1024 vhost CPU %q", got)
	}
	na := "n/a[n/a: unsupported (EOPNOTSUPP: this kernel's tun has no AF_XDP zero-copy)]"
	if got := strings.Join(cells(stock, "UDP 64", "Transmitted"), "|"); got != "2.52 Mpps|"+na+"|-" {
		t.Errorf("stock 64 Transmitted %q", got)
	}
	if stock.Rows[0].Labels[0] != "UDP 64" || stock.Rows[len(stock.Rows)-1].Labels[0] != "UDP 1024" {
		t.Errorf("rows not in size order: first %v, last %v", stock.Rows[0].Labels, stock.Rows[len(stock.Rows)-1].Labels)
	}
	var buf bytes.Buffer
	r.Tables = []*Table{stock}
	if err := WriteText(&buf, r, ASCII); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "versus-stock.txt", buf.Bytes())
}

// A sample that says its thread count only by its per-thread numbers
// (no threads axis, no label) gets the same per-thread wording in the
// versus table as in every other table: threadsOf is the one rule.
func TestVersusThreadsFromSample(t *testing.T) {
	set := versusSet()
	for i := range set.Samples {
		s := &set.Samples[i]
		delete(s.Axes, "generator.afxdp.threads")
		if s.Unsupported == "" {
			tx := s.Metrics["tx_pps"]
			s.Threads = []results.ThreadSample{{I: 0, TxPPS: tx * 0.4}, {I: 1, TxPPS: tx * 0.6}}
		}
	}
	r, err := Build(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range r.Tables {
		if x.Kind != KindVersus {
			continue
		}
		n++
		perThread := false
		for _, row := range x.Rows {
			perThread = perThread || row.Labels[1] == "Tx per thread"
		}
		if !perThread {
			t.Errorf("%s: no Tx per thread row for 2-thread samples", x.Title)
		}
		if !strings.Contains(strings.Join(x.Notes, "\n"), "total over its 2 threads") {
			t.Errorf("%s: notes do not say the total is over 2 threads: %q", x.Title, x.Notes)
		}
	}
	if n != 2 {
		t.Fatalf("%d versus tables, want 2", n)
	}
}

// A cell whose axes hold another "....threads" key beside the generator's
// (a latency probe's, say) counts the generator's threads, every time:
// not whichever the axes map yields first.
func TestThreadsOfPrefersTheGeneratorsAxis(t *testing.T) {
	s := &results.Sample{Axes: map[string]string{
		"generator": "pktgen", "generator.pktgen.threads": "4",
		"latency.threads": "1", "a.threads": "2", "z.threads": "3",
	}}
	tab := workload.Table{ThreadsKey: "threads"}
	for range 50 {
		if got := threadsOf(s, tab); got != 4 {
			t.Fatalf("threadsOf = %d, want 4 (generator.pktgen.threads)", got)
		}
	}
	delete(s.Axes, "generator.pktgen.threads")
	for range 50 {
		if got := threadsOf(s, tab); got != 2 {
			t.Fatalf("without the generator's axis threadsOf = %d, want 2 (a.threads, first in key order)", got)
		}
	}
}

// A "-" in a Versus table says why, as an "n/a" does: in the real lab
// run the AF_XDP table's copy column was not run (only zero-copy, n/a on
// both kernels), and its speedup has nothing to compare. Without a note
// the "-" under copy read as a copy rate of nothing.
func TestVersusDashesExplained(t *testing.T) {
	_, r := built(t, Options{Kinds: []string{KindVersus}}, "lab-pktgen-tcg")
	n := 0
	for _, tb := range r.Tables {
		if tb.Kind != KindVersus {
			continue
		}
		n++
		dash := map[int]bool{} // the columns with a "-"
		for _, row := range tb.Rows {
			for i, c := range row.Cells {
				if c.Text == "-" {
					dash[i] = true
				}
			}
		}
		for i := range dash {
			want := fmt.Sprintf("%q under %s = ", "-", tb.Header[i])
			if !slices.ContainsFunc(tb.Notes, func(s string) bool { return strings.HasPrefix(s, want) }) {
				t.Errorf("table %q: a - under %s without a note %q...: %q", tb.Title, tb.Header[i], want, tb.Notes)
			}
		}
	}
	if n != 4 {
		t.Errorf("%d versus tables, want the 4 AF_XDP tables", n)
	}
}
