package report

// Metric definitions and tables of the workloads (tx_pps, throughput_bps,
// ...) come from the workload registry.
import (
	"testing"

	"github.com/vnetbench/vnetbench/internal/results"
	_ "github.com/vnetbench/vnetbench/internal/workload/all"
)

// TestDiagnosticHeaders: every diagnostic of the harness and of the
// registered workloads names its harness table column (a metric without
// one had an empty header and a legend " = tx_run_s ").
func TestDiagnosticHeaders(t *testing.T) {
	for _, k := range results.Diagnostics() {
		m, ok := results.Lookup(k)
		if !ok || m.Header == "" || m.HeaderNote == "" {
			t.Errorf("diagnostic %s: header %q, note %q; set Header and HeaderNote in its Metric", k, m.Header, m.HeaderNote)
		}
	}
}
