package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

// udpRun is a real run of two iperf3 UDP cells (50 Mbit/s, forward and
// reverse, 3 runs each) into a TCG guest: testdata/README.md.
const udpRun = "iperf3-udp-jitter-tcg"

// iperf3Rows returns the rows of set's iperf3 tables by the table's
// context and the row's label: the cells' texts.
func iperf3Rows(t *testing.T, set *results.Set) (map[string]map[string][]string, map[string]string) {
	t.Helper()
	r, err := Build(set, Options{Kinds: []string{KindThread}})
	if err != nil {
		t.Fatal(err)
	}
	rows, notes := map[string]map[string][]string{}, map[string]string{}
	for _, tab := range r.Tables {
		if !strings.HasPrefix(tab.Context, "iperf3") {
			continue
		}
		rows[tab.Context] = map[string][]string{}
		for _, row := range tab.Rows {
			for _, c := range row.Cells {
				label := row.Labels[len(row.Labels)-1]
				rows[tab.Context][label] = append(rows[tab.Context][label], c.Text)
			}
		}
		notes[tab.Context] = strings.Join(tab.Notes, "\n")
	}
	return rows, notes
}

// A UDP cell's table has the receiver's Jitter (in us) and the share of
// datagrams lost, the medians of the real runs (forward: jitter 129.1,
// 96.5 and 30.1 us, lost 1.28%, 2.37% and 0%; reverse: 74.6, 183.7 and
// 79.7 us, lost 0.905%, 0% and 1.25%), and footnotes that define them; a
// TCP table (iperf3-udp-tcp-tcg's, from before these metrics, and TCP
// has none) has neither.
func TestIperf3UDPJitterLossRows(t *testing.T) {
	rows, notes := iperf3Rows(t, loadSet(t, udpRun))
	want := map[string][2]string{"reverse false": {"96.5 us", "1.28%"}, "reverse true": {"79.7 us", "0.905%"}}
	if len(rows) != 2 {
		t.Fatalf("iperf3 tables %v, want forward and reverse", rows)
	}
	for ctx, r := range rows {
		w, ok := want[ctx[strings.LastIndex(ctx, "reverse"):]]
		if !ok || !slices.Equal(r["Jitter"], w[:1]) || !slices.Equal(r["Datagrams lost"], w[1:]) {
			t.Errorf("%s: Jitter %v, Datagrams lost %v, want %v", ctx, r["Jitter"], r["Datagrams lost"], w)
		}
		if !strings.Contains(notes[ctx], "Jitter = the receiver's RFC 3550") || !strings.Contains(notes[ctx], "Datagrams lost = datagrams the receiver never saw") {
			t.Errorf("%s: notes do not define Jitter and Datagrams lost:\n%s", ctx, notes[ctx])
		}
	}
	rows, notes = iperf3Rows(t, loadSet(t, "iperf3-udp-tcp-tcg"))
	for ctx, r := range rows {
		if _, ok := r["Jitter"]; ok || strings.Contains(notes[ctx], "Jitter =") {
			t.Errorf("%s: a Jitter row or legend without jitter measured: %v", ctx, r)
		}
	}
}

// scaled is set with the UDP jitter of every sample times f.
func scaled(set *results.Set, f float64) *results.Set {
	out := *set
	out.Samples = nil
	for _, s := range set.Samples {
		m := map[metric.Key]float64{}
		for k, v := range s.Metrics {
			m[k] = v
		}
		m[metric.Iperf3JitterS] *= f
		s.Metrics = m
		out.Samples = append(out.Samples, s)
	}
	return &out
}

// Jitter and loss are lower-is-better everywhere a direction is read:
// compare gates them by default against a rise (a doubled jitter trips,
// a halved one does not), and benchfmt tells benchstat so.
func TestIperf3UDPDirection(t *testing.T) {
	set := loadSet(t, udpRun)
	for _, tc := range []struct {
		f       float64
		tripped bool
	}{{2, true}, {0.5, false}} {
		res, err := CompareRuns(repeated(set, 10), repeated(scaled(set, tc.f), 10), CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gated := map[metric.Key]int{}
		for _, d := range res.Decisions {
			k := metric.Key(d.Gate.Metric)
			if k != metric.Iperf3JitterS && k != metric.Iperf3LostFrac {
				continue
			}
			gated[k]++
			if d.Gate.Op != '>' {
				t.Errorf("%s %s: gate %+v, want a rise gated", d.Cell, k, d.Gate)
			}
			if k == metric.Iperf3JitterS && d.Tripped != tc.tripped {
				t.Errorf("jitter x%v, %s: tripped %v, want %v (%s)", tc.f, d.Cell, d.Tripped, tc.tripped, d.String())
			}
		}
		if gated[metric.Iperf3JitterS] != 2 || gated[metric.Iperf3LostFrac] != 2 {
			t.Errorf("default gates of jitter and loss per cell: %v, want 2 each", gated)
		}
	}
	var b bytes.Buffer
	if err := results.WriteBenchfmt(&b, set); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Unit iperf3_jitter_s better=lower", "Unit iperf3_lost_frac better=lower"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("benchfmt lacks %q", want)
		}
	}
}

// The latency table shows a UDP load's own jitter and loss beside the
// probe's RTT, and a footnote defines them; a TCP load has its sRTT
// instead. Real run: latency-quickstart (testdata/README.md), where the
// UDP flood lost 89.3% (pfifo_fast, jitter 4.45 ms) and 83.7% (noqueue,
// 17.7 us) of its datagrams.
func TestLatencyTableUDPJitterLoss(t *testing.T) {
	r, err := Build(loadSet(t, "latency-quickstart-tcg"), Options{Kinds: []string{KindLatency}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tables) != 1 {
		t.Fatalf("%d tables, want the latency table", len(r.Tables))
	}
	got := map[string]string{}
	for _, row := range r.Tables[0].Rows {
		load := row.Labels[0][:strings.Index(row.Labels[0], " (")]
		got[load+"/"+row.Labels[1]] = row.Cells[0].Text
	}
	for k, want := range map[string]string{
		"pfifo_fast: tap/iperf3-p1/udp/iperf3 jitter (its flow)": "4.45 ms",
		"pfifo_fast: tap/iperf3-p1/udp/iperf3 datagrams lost":    "89.3%",
		"noqueue: tap/iperf3-p1/udp/iperf3 jitter (its flow)":    "17.7 us",
		"noqueue: tap/iperf3-p1/udp/iperf3 datagrams lost":       "83.7%",
		"noqueue: tap/iperf3-p1/tcp/iperf3 jitter (its flow)":    "",
		"noqueue: tap/iperf3-p1/tcp/iperf3 datagrams lost":       "",
		"noqueue: tap/iperf3-p1/tcp/iperf3 sRTT (its flow)":      "2.66 ms",
		"noqueue: tap/iperf3-p1/udp/iperf3 sRTT (its flow)":      "",
	} {
		checkText(t, got, k, want)
	}
	// The footnote says which side measured them, over which interval,
	// and per stream or total, as the iperf3 table's does: the latency
	// table may be shown alone.
	i := slices.IndexFunc(r.Tables[0].Notes, func(n string) bool {
		return strings.HasPrefix(n, "iperf3 jitter and datagrams lost = the UDP load's own receiver")
	})
	if i < 0 {
		t.Fatalf("notes do not define the UDP load's rows:\n%s", strings.Join(r.Tables[0].Notes, "\n"))
	}
	for _, want := range []string{"the guest's iperf3 server, with reverse the host's client", "at the end of its test",
		"the mean over streams and clients", "over iperf3's test time", "the total over all streams and clients"} {
		if !strings.Contains(r.Tables[0].Notes[i], want) {
			t.Errorf("the UDP load's note lacks %q: %s", want, r.Tables[0].Notes[i])
		}
	}
}

// checkText reports a text of got, by key, that is not want.
func checkText(t *testing.T, got map[string]string, key, want string) {
	t.Helper()
	if got[key] != want {
		t.Errorf("%s = %q, want %q", key, got[key], want)
	}
}

// Every row of the latency table is defined in its notes, as every table
// says what each number counts: the probe's RTTs and qdisc wait by the
// fixed notes, the UDP load's own by its note, and the rest (Throughput,
// Lost, the load's sRTT, probe loss, the qdisc backlog) each from its
// metric's description. Real run: latency-quickstart (testdata/README.md).
func TestLatencyTableDefinesEveryRow(t *testing.T) {
	r, err := Build(loadSet(t, "latency-quickstart-tcg"), Options{Kinds: []string{KindLatency}})
	if err != nil {
		t.Fatal(err)
	}
	tb := r.Tables[0]
	notes := strings.Join(tb.Notes, "\n")
	fixed := map[string]string{"RTT idle p50": "idle = ", "RTT p50": "RTT = ", "RTT p99": "RTT = ", "RTT p99.9": "RTT = ",
		"qdisc wait p99": "qdisc wait = ", iperf3JitterLabel: "iperf3 jitter and datagrams lost = ", iperf3LostLabel: "iperf3 jitter and datagrams lost = "}
	labels := map[string]bool{}
	for _, row := range tb.Rows {
		labels[row.Labels[len(row.Labels)-1]] = true
	}
	for l := range labels {
		want := l + " = "
		if f, ok := fixed[l]; ok {
			want = f
		}
		if !strings.Contains(notes, want) {
			t.Errorf("row %q is not defined (no %q in the notes):\n%s", l, want, notes)
		}
	}
	for _, want := range []string{"Throughput (received)", "Lost", "iperf3 sRTT (its flow)", "probe loss", "qdisc backlog max (bytes)"} {
		if !labels[want] {
			t.Errorf("the real run's latency table has no %q row: the test no longer covers it", want)
		}
	}
	if strings.Contains(notes, "RTT p50 = ") || strings.Contains(notes, iperf3JitterLabel+" = ") {
		t.Errorf("a row the fixed notes define is defined twice:\n%s", notes)
	}
}
