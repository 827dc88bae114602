package report

import (
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

// TestQemuTargetComposition: perf -p QEMU counts the vhost-net workers on
// Linux 6.4+ (threads of QEMU) but not before (kernel threads). A perf
// table says what the qemu target counted, and warns when its columns
// counted different threads.
func TestQemuTargetComposition(t *testing.T) {
	build := func(labels ...[2]string) string {
		set := &results.Set{}
		for _, kl := range labels {
			k, l := kl[0], kl[1]
			for rep := range 2 {
				set.Samples = append(set.Samples, results.Sample{Cell: "tap+vhost/pktgen", Kernel: k, Rep: rep,
					Axes:    map[string]string{"backend": "tap+vhost", "generator": "pktgen"},
					Metrics: map[metric.Key]float64{"tx_pps": 1000, "perf.cycles@qemu": 5e6 + float64(rep), "perf.cycles@vhost": 1e6},
					Labels:  map[string]string{"qemu_target": l}})
			}
		}
		r, err := Build(set, Options{By: "kernel"})
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range r.Tables {
			if tb.Kind == KindPerfStat {
				return strings.Join(tb.Notes, "\n")
			}
		}
		t.Fatal("no perf stat table")
		return ""
	}
	mixed := build([2]string{"6.1", "qemu (vhost kthreads apart)"}, [2]string{"6.12", "qemu+vhost"})
	if !strings.Contains(mixed, "WARNING: perf@qemu counts different threads per column (6.1: qemu (vhost kthreads apart); 6.12: qemu+vhost)") {
		t.Errorf("6.1 beside 6.12: notes lack the warning:\n%s", mixed)
	}
	same := build([2]string{"6.6", "qemu+vhost"}, [2]string{"6.12", "qemu+vhost"})
	if strings.Contains(same, "WARNING") || !strings.Contains(same, "vhost-net workers (threads of QEMU on Linux 6.4+)") {
		t.Errorf("6.6 beside 6.12: notes:\n%s", same)
	}
	// A plain tap's label, "qemu", read "qemu = perf -p QEMU: qemu";
	// an older kernel's said its label too, not what it counted.
	for label, want := range map[string]string{
		"qemu":                        "qemu = perf -p QEMU: its vCPU and I/O threads (a plain tap: no vhost-net worker)",
		"qemu (vhost kthreads apart)": "qemu = perf -p QEMU: its vCPU and I/O threads, not the vhost-net workers (kernel threads before Linux 6.4; perf@vhost counts them)",
	} {
		if got := build([2]string{"6.1", label}); !strings.Contains(got, want) {
			t.Errorf("label %q: notes lack %q:\n%s", label, want, got)
		}
	}
}

// TestHybridNote: a perf table of samples whose counters were merged from
// a hybrid CPU's PMUs says so, and IPC is derived from the merged keys.
func TestHybridNote(t *testing.T) {
	set := &results.Set{}
	for rep := range 2 {
		set.Samples = append(set.Samples, results.Sample{Cell: "tap/pktgen", Kernel: "running", Rep: rep,
			Axes:    map[string]string{"backend": "tap", "generator": "pktgen"},
			Metrics: map[metric.Key]float64{"tx_pps": 1000, "perf.cycles@kpktgend": 7.2e9, "perf.instructions@kpktgend": 13.6e9},
			Labels:  map[string]string{"perf_hybrid": "cpu_atom+cpu_core"}})
	}
	r, err := Build(set, Options{By: "kernel"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range r.Tables {
		if tb.Kind != KindPerfStat {
			continue
		}
		notes := strings.Join(tb.Notes, "\n")
		if !strings.Contains(notes, "hybrid CPU: each counter is the sum over the core types' PMUs (cpu_atom+cpu_core)") || !strings.Contains(notes, "IPC kpktgend: running 1.89") {
			t.Errorf("notes:\n%s", notes)
		}
		return
	}
	t.Fatal("no perf stat table")
}
