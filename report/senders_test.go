package report

import (
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/results"
)

// 1, 2, 4 and 8 pktgen threads on one queue (lab-many-senders' axis) read
// as one senders table per backend: a row per thread count and kernel,
// Tx and Lost total and per thread as columns, with each cell's medians;
// the thread's 1 and 4 threads stay a thread table each.
func TestSendersTable(t *testing.T) {
	set := runnerSamples(t, `backend: [tap, tap+vhost]
qdisc: fq_codel
generator: {pktgen: {mode: multiqueue, threads: [1, 2, 4, 8], count: 0, duration: 3s, xmit_mode: start_xmit}}
`, 1)
	for i := range set.Samples {
		s := &set.Samples[i]
		_, n, ok := threadsAxis(s)
		if !ok {
			t.Fatalf("sample %s has no threads axis: %v", s.Cell, s.Axes)
		}
		for th := range n {
			lost := 100.0
			s.Threads = append(s.Threads, results.ThreadSample{I: th, TxPPS: s.Metrics["tx_pps"] / float64(n), LostPPS: &lost})
		}
	}
	r, err := Build(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var senders []*Table
	for _, tb := range r.Tables {
		switch tb.Kind {
		case KindSenders:
			senders = append(senders, tb)
		case KindThread:
			t.Errorf("thread table %q beside the senders tables", tb.Title)
		}
	}
	if len(senders) != 2 {
		t.Fatalf("%d senders tables, want one per backend:\n%s", len(senders), titles(r))
	}
	tb := senders[0]
	if !strings.HasPrefix(tb.Context, "TAP: pktgen") || strings.Contains(tb.Context, "thread") {
		t.Errorf("context %q: want the backend, no thread count", tb.Context)
	}
	if got := strings.Join(tb.Header, ","); got != "Tx total,Tx per thread,Lost total,Lost per thread" {
		t.Errorf("header %s", got)
	}
	var rows []string
	for _, row := range tb.Rows {
		rows = append(rows, row.Labels[0]+" "+row.Labels[1])
	}
	if got := strings.Join(rows, ","); got != "1 thread stock,1 thread patched,2 threads stock,2 threads patched,4 threads stock,4 threads patched,8 threads stock,8 threads patched" {
		t.Errorf("rows %s", got)
	}
	// runnerSamples: cell i has tx_pps 100000*(i+1); 8 threads share it.
	eight := tb.Rows[6]
	if tot, per := *eight.Cells[0].Value, *eight.Cells[1].Value; per != tot/8 {
		t.Errorf("8 threads: total %v, per thread %v, want total/8", tot, per)
	}

	// Two thread counts: thread tables as before.
	set = runnerSamples(t, `backend: tap
generator: {pktgen: {mode: multiqueue, threads: [1, 4], count: 5000}}
`, 1)
	if r, err = Build(set, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, tb := range r.Tables {
		if tb.Kind == KindSenders {
			t.Errorf("a senders table for 2 thread counts: %q", tb.Title)
		}
	}
}
