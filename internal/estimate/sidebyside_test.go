package estimate

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// fixedRates: a lab VM boots in 60 s, a guest in 100 s, a sample's
// setup and teardown take 5 s.
type fixedRates struct{}

func (fixedRates) Boot(workload string, c Class) Figure {
	if workload == "lab" {
		return Figure{60, "test"}
	}
	return Figure{100, "test"}
}
func (fixedRates) PPS(string, Class) Figure      { return Figure{1000, "test"} }
func (fixedRates) Overhead(string, Class) Figure { return Figure{5, "test"} }

// labKernels is n lab kernels of 2 samples each (10 s windows), one
// guest boot per kernel.
func labKernels(labels ...string) []Sample {
	var out []Sample
	for _, l := range labels {
		for i := range 2 {
			out = append(out, Sample{Kernel: l, Workload: "pktgen", Class: TCGNested, Lab: i == 0, LabClass: TCG, Boot: i == 0, Window: 10 * time.Second})
		}
	}
	return out
}

// Two labs side by side on 2 CPUs: their boot parts (60 + 100 s each)
// overlap, but together need 2 x 1.2 CPUs, so they take 192 s, not 160:
// 128 s saved; the windows and setups stay one after the other. The
// saving comes off patched's first sample (the ETA) and is printed.
func TestEstimateSideBySide(t *testing.T) {
	e := Of(labKernels("stock", "patched"), fixedRates{})
	serial := e.Total
	if serial != 2*(160+2*15)*time.Second {
		t.Fatalf("one after the other: %v", serial)
	}
	e.SideBySide(2, 2)
	if want := 128 * time.Second; e.SideBySideSaving != want || e.Total != serial-want {
		t.Errorf("saving %v, total %v; want %v off %v", e.SideBySideSaving, e.Total, want, serial)
	}
	var sum time.Duration
	for _, d := range e.PerSample {
		sum += d
	}
	if sum != e.Total || e.PerSample[2] != (160+15-128)*time.Second {
		t.Errorf("per sample %v (sum %v), want patched's first less the saving, summing to the total", e.PerSample, sum)
	}
	var b bytes.Buffer
	e.Write(&b, "", nil)
	if !strings.Contains(b.String(), "labs side by side: up to 2 lab VMs boot at once, then measure in turn, one at a time: about -2 min") {
		t.Errorf("estimate lacks the side-by-side line:\n%s", b.String())
	}
	// Four CPUs: the boots fit beside each other, 160 s saved.
	e = Of(labKernels("stock", "patched"), fixedRates{})
	if e.SideBySide(2, 4); e.SideBySideSaving != 160*time.Second {
		t.Errorf("4 CPUs: saving %v, want 160 s", e.SideBySideSaving)
	}
	// One at a time (n 1), or one lab: nothing changes, nothing printed.
	for _, e := range []*Estimate{Of(labKernels("stock", "patched"), fixedRates{}), Of(labKernels("stock"), fixedRates{})} {
		before := e.Total
		e.SideBySide(map[bool]int{true: 1, false: 2}[len(e.Kernels) == 2], 2)
		b.Reset()
		e.Write(&b, "", nil)
		if e.Total != before || strings.Contains(b.String(), "side by side") {
			t.Errorf("%d kernels: total %v -> %v, printed:\n%s", len(e.Kernels), before, e.Total, b.String())
		}
	}
}
