package runner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/runner/qemu"
)

// Guest boots are kept by the guest's kernel: real runs on the 2-core
// TCG machine booted Debian's 6.1 guest in 29.9 s and its 6.12 in 42.7 s
// (the vsock loopback runs, from before samples had accel and guest
// labels: env.json's accel and guest_kernel) and the 6.1 guest nested in
// lab VMs in 121.5 and 124.2 s (lab-pktgen, its samples' guest label).
// Each kernel's estimate is its own; a kernel not measured here takes
// its class's boots, and says so.
func TestObservationsByGuestKernel(t *testing.T) {
	tab := &estimate.Table{Entries: map[string]*estimate.Entry{}}
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, run := range []struct{ dir, scenario string }{
		{"../internal/workload/vsock/testdata/real/loopback-61-tcg", "vsock-sockmap-loopback"},
		{"../internal/workload/vsock/testdata/real/loopback-612-tcg", "vsock-sockmap-loopback"},
		{"../report/testdata/real/lab-pktgen-3run-tcg", "lab-pktgen"},
	} {
		obs, err := Observations(run.dir, builtinCells(t, run.scenario), qemu.KVMStatus{Why: "none"}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		tab.Add(obs, at)
	}
	for _, tc := range []struct {
		kernel string
		class  estimate.Class
		want   estimate.Figure
	}{
		{"6.1", estimate.TCG, estimate.Figure{Value: 29.88, Source: "measured here, 1 boot of Linux 6.1, 2026-12-04"}},
		{"6.12", estimate.TCG, estimate.Figure{Value: 42.73, Source: "measured here, 1 boot of Linux 6.12, 2026-12-04"}},
		{"6.1", estimate.TCGNested, estimate.Figure{Value: (121.45 + 124.18) / 2, Source: "measured here, 2 boots of Linux 6.1, 2026-12-04"}},
		{"6.12", estimate.TCGNested, estimate.Figure{Value: (121.45 + 124.18) / 2, Source: "measured here, 2 boots of any guest kernel, 2026-12-04"}},
		{"", estimate.TCG, estimate.Figure{Value: (29.88 + 42.73) / 2, Source: "measured here, 2 boots, 2026-12-04"}},
	} {
		got := tab.Boot(estimate.GuestOf(tc.kernel), tc.class)
		if got.Source != tc.want.Source || got.Value-tc.want.Value > 1e-9 || tc.want.Value-got.Value > 1e-9 {
			t.Errorf("boot of Linux %q under %s: %+v, want %+v", tc.kernel, tc.class, got, tc.want)
		}
	}
	// plan says which kernel's boots it took: vsock-sockmap-loopback's
	// guest is Debian's 6.12 (guest.kernel), lab-pktgen's Debian's 6.1.
	for name, want := range map[string]string{
		"vsock-sockmap-loopback": "43 s each, tcg, guest Linux 6.12: measured here, 1 boot of Linux 6.12, 2026-12-04",
		"lab-pktgen":             "2 min each, tcg-nested, guest Linux 6.1: measured here, 2 boots of Linux 6.1, 2026-12-04",
	} {
		e := estimate.Of(EstimateSamples(builtinCells(t, name), qemu.KVMStatus{Why: "none"}, true), tab)
		var srcs []string
		for _, l := range e.Kernels[0].Lines {
			if l.What == estimate.LineBoots {
				srcs = l.Sources
			}
		}
		if !slices.Contains(srcs, want) {
			t.Errorf("%s: guest boots from %s, want %q", name, strings.Join(srcs, "; "), want)
		}
	}
}
