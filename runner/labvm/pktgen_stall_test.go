package labvm

import (
	"slices"
	"strings"
	"testing"
)

// stallSample is a measured pktgen sample of kernel and cell ("backend
// mode threads") that sent txPPS, with the given warnings.
func stallSample(kernel, cell string, txPPS float64, warnings ...string) e2eSample {
	f := strings.Fields(cell)
	return e2eSample{
		Kernel:   kernel,
		Axes:     map[string]string{"generator": "pktgen", "backend": f[0], "generator.pktgen.mode": f[1], "generator.pktgen.threads": f[2]},
		Metrics:  map[string]float64{"lost_pps": 0, "tx_run_s": 3, "tx_pps": txPPS},
		Warnings: warnings,
	}
}

// TestCheckStalled is the e2e tests' stalled-receiver acceptance without
// a lab: at most maxStalled of a kernel's cells with tx_pps 0, each with
// the reason, a cell counted once however many repetitions stalled.
func TestCheckStalled(t *testing.T) {
	const why = stalledReceiver + "the guest read nothing in 3 s"
	// Two cells of stock stalled, one of them in three repetitions: two
	// cells, not four samples.
	ok := []e2eSample{
		stallSample("stock", "tap simple 1", 0, why),
		stallSample("stock", "tap simple 1", 0, why),
		stallSample("stock", "tap simple 1", 0, why),
		stallSample("stock", "tap+vhost script 4", 0, why),
		stallSample("stock", "tap script 1", 900),
		stallSample("patched", "tap simple 1", 0, why),
		stallSample("patched", "tap script 1", 1200),
	}
	stalled, problems := checkStalled(ok)
	if len(problems) != 0 {
		t.Errorf("two stalled cells (one in three repetitions): problems %q", problems)
	}
	if got := stalled["stock"]; !slices.Equal(got, []string{"tap simple 1", "tap+vhost script 4"}) {
		t.Errorf("stock's stalled cells %q", got)
	}
	if got := stalled["patched"]; !slices.Equal(got, []string{"tap simple 1"}) {
		t.Errorf("patched's stalled cells %q", got)
	}

	// A third stalled cell is one too many.
	three := append(slices.Clone(ok), stallSample("stock", "tap multiqueue 4", 0, why))
	if _, problems := checkStalled(three); len(problems) != 1 || !strings.Contains(problems[0], "kernel stock: 3 of 8 pktgen cells") {
		t.Errorf("three stalled cells: problems %q", problems)
	}

	// tx_pps 0 without the reason is not a stall the harness explained;
	// a sample without lost_pps and tx_run_s is not measured (checkCells
	// reports its cell).
	unmeasured := stallSample("patched", "tap multiqueue 4", 0)
	unmeasured.Metrics = map[string]float64{}
	bare := append(slices.Clone(ok), stallSample("patched", "tap script 4", 0, "some other warning"), unmeasured)
	if _, problems := checkStalled(bare); len(problems) != 1 || !strings.Contains(problems[0], "kernel patched, cell tap script 4: tx_pps 0 without the reason") {
		t.Errorf("tx_pps 0 without the reason: problems %q", problems)
	}
}
