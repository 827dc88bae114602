package report

import (
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// byteRater is a workload whose table writes its bit/s metric in MB/s, as
// the vsock series does: the unit is the table's choice.
type byteRater struct{}

func (byteRater) Name() string         { return "byterater" }
func (byteRater) Doc() string          { return "a test workload whose table reads in MB/s" }
func (byteRater) New() workload.Config { return nil }
func (byteRater) Metrics() []metric.Metric {
	return []metric.Metric{{Key: "byterater_bps", Unit: "bit/s", Better: metric.HigherIsBetter, Rate: true, Description: "bits received/s"}}
}
func (byteRater) Table() workload.Table {
	return workload.Table{Headline: "byterater_bps", ThreadsKey: "streams", ThreadsNoun: "streams",
		Rows: func(int, workload.Seen) []workload.TableRow {
			return []workload.TableRow{{Key: "byterater_bps", Label: "Received", Scale: units.MBps}}
		}}
}

func TestTableRowScale(t *testing.T) {
	workload.Register(byteRater{})
	t.Cleanup(func() { workload.Unregister("byterater") })
	set := &results.Set{Env: map[string]*results.Env{}}
	for rep := range 3 {
		for _, k := range []struct {
			kernel string
			bps    float64
		}{{"stock", 8e9}, {"patched", 1.2e9}} {
			set.Samples = append(set.Samples, results.Sample{Cell: "tap/byterater", Kernel: k.kernel, Rep: rep,
				Axes: map[string]string{"backend": "tap", "generator": "byterater"}, Labels: map[string]string{"generator": "byterater"},
				Metrics: map[metric.Key]float64{"byterater_bps": k.bps}})
		}
	}
	r, err := Build(set, Options{Kinds: []string{KindThread}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tables) != 1 || len(r.Tables[0].Rows) != 1 {
		t.Fatalf("tables %+v, want one with one row", r.Tables)
	}
	row := r.Tables[0].Rows[0]
	if got := []string{row.Cells[0].Text, row.Cells[1].Text}; got[0] != "1000 MB/s" || got[1] != "150 MB/s" {
		t.Errorf("cells %q, want 1000 MB/s and 150 MB/s", got)
	}
}

// Packet rates switch to Mpps at the rounded value: a thread table never
// shows "1000 Kpps".
func TestThreadTableUnits(t *testing.T) {
	set := &results.Set{Env: map[string]*results.Env{}}
	for rep := range 3 {
		set.Samples = append(set.Samples, results.Sample{Cell: "tap/pktgen-t1", Kernel: "k", Rep: rep,
			Axes: map[string]string{"backend": "tap", "generator": "pktgen-t1"}, Labels: map[string]string{"generator": "pktgen"},
			Metrics: map[metric.Key]float64{"tx_pps": 999_999, "lost_pps": 999.6}})
	}
	r, err := Build(set, Options{Kinds: []string{KindThread}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Transmitted": "1.00 Mpps", "Lost": "1.00 Kpps"}
	for _, row := range r.Tables[0].Rows {
		if got := row.Cells[0].Text; got != want[row.Labels[1]] {
			t.Errorf("%s = %q, want %q", row.Labels[1], got, want[row.Labels[1]])
		}
	}
}
