// Package estimate says how long a run will take before it starts: per
// kernel, the lab VM's boot, the guest boots, the windows of
// duration-bound cells (their length is in the scenario) and the windows
// of count-bound cells (packets at an expected rate), plus each sample's
// setup and teardown. Rates and boot times come from the host's own
// earlier runs of the same workload and accelerator (Table, kept in the
// cache directory by Record), else from the conservative defaults in
// Defaults; every figure says which.
//
// The package is pure: plain data in, an Estimate out; Load and Save read
// and write the table's file and start nothing. The caller (plan, run)
// describes the samples: it knows the run order, which sample boots a
// guest and each cell's accelerator.
package estimate

import (
	"fmt"
	"time"
)

// Class is the accelerator a guest runs under, the key of rates and
// boot times with the workload: the host's guests under TCG or KVM, or
// a lab VM's nested guests under TCG (lab mode on a host without KVM:
// TCG inside TCG) or nested KVM.
type Class string

const (
	TCG       Class = "tcg"
	TCGNested Class = "tcg-nested"
	KVM       Class = "kvm"
	KVMNested Class = "kvm-nested"
)

// ClassOf is the class of a guest under accel ("kvm" or "tcg"), nested
// when it runs inside a lab VM.
func ClassOf(accel string, nested bool) Class {
	c := TCG
	if accel == "kvm" {
		c = KVM
	}
	if nested {
		c += "-nested"
	}
	return c
}

// Nested is c for a guest inside a lab VM: the run inside the lab sees
// its guests as the running kernel's, but they are nested.
func Nested(c Class) Class {
	switch c {
	case TCG:
		return TCGNested
	case KVM:
		return KVMNested
	}
	return c
}

// Sample is one sample of the run, in run order.
type Sample struct {
	Kernel   string
	Workload string
	Class    Class
	// Lab is set on the first sample of a kernel booted in a lab VM:
	// that VM boots before it, under LabClass (TCG or KVM).
	Lab      bool
	LabClass Class
	// GuestKernel is the Linux version of the guest's kernel ("6.1",
	// "6.12"; "" = not known before the run): its boots are estimated
	// from that kernel's, else from the class's.
	GuestKernel string
	// Boot is set when a guest boots before this sample; Restore when it
	// starts from the state an earlier lab saved of the same guest
	// instead (runner's guest states).
	Boot, Restore bool
	// Warmup precedes the window.
	Warmup time.Duration
	// Window is a duration-bound cell's window. For a count-bound cell
	// (Packets > 0) it caps the window when above 0.
	Window time.Duration
	// Packets is what a count-bound cell's window sends before it ends
	// (0 = duration-bound).
	Packets uint64
}

// Figure is one estimated quantity and where it came from.
type Figure struct {
	Value  float64 // seconds; for a rate, packets per second
	Source string  // "default" or "measured here (N, last DATE)"
}

// Rates answers what a class and workload are expected to take.
type Rates interface {
	// Boot is one guest boot of class c (a lab VM's own boot with the
	// lab's class and workload "lab"; a guest's: WorkloadGuest).
	Boot(workload string, c Class) Figure
	// PPS is the rate of a count-bound window.
	PPS(workload string, c Class) Figure
	// Overhead is a sample's setup and teardown outside its window.
	Overhead(workload string, c Class) Figure
}

// Line is one row of a kernel's estimate: N items taking Time in all.
type Line struct {
	What string        `json:"what"` // "lab VM boot", "guest boots", "windows", "count-bound windows", "setup and teardown"
	N    int           `json:"n"`
	Time time.Duration `json:"time_ns"`
	// Packets is what the count-bound windows send in all.
	Packets uint64 `json:"packets,omitempty"`
	// Sources lists, per workload and class, the figure used.
	Sources []string `json:"sources,omitempty"`
}

// Kernel is the estimate of one kernel's samples.
type Kernel struct {
	Label string        `json:"kernel"`
	Lines []Line        `json:"lines"`
	Total time.Duration `json:"total_ns"`
}

// Estimate is a run's estimate.
type Estimate struct {
	// Build is the build part, before any lab boots (AddBuild):
	// fetches, decisions, module and kernel builds.
	Build      []Line        `json:"build,omitempty"`
	BuildTotal time.Duration `json:"build_total_ns,omitempty"`
	Kernels    []Kernel      `json:"kernels"`
	Total      time.Duration `json:"total_ns"`
	// PerSample is each input sample's estimated time (its lab VM's and
	// guest's boots included), in order: the progress line's ETA.
	PerSample []time.Duration `json:"-"`
	// SideBySideN is how many lab VMs boot at once (SideBySide; below 2:
	// one after the other), SideBySideSaving what that takes off Total.
	SideBySideN      int           `json:"labs_side_by_side,omitempty"`
	SideBySideSaving time.Duration `json:"side_by_side_saving_ns,omitempty"`
	// firstSample is each kernel's first sample (its lab boots there).
	firstSample map[string]int
}

// Line names, in the order a kernel's lines print.
const (
	LineLab      = "lab VM boot"
	LineBoots    = "guest boots"
	LineRestores = "guest starts from saved states"
	LineWindows  = "windows"
	LineCounted  = "count-bound windows"
	LineOverhead = "setup and teardown"
)

var lineOrder = []string{LineLab, LineBoots, LineRestores, LineWindows, LineCounted, LineOverhead}

// Of estimates samples with rates r.
func Of(samples []Sample, r Rates) *Estimate {
	e := &Estimate{PerSample: make([]time.Duration, len(samples)), firstSample: map[string]int{}}
	byLabel := map[string]*Kernel{}
	lines := map[string]map[string]*Line{}
	for i, s := range samples {
		k := byLabel[s.Kernel]
		if k == nil {
			e.Kernels = append(e.Kernels, Kernel{Label: s.Kernel})
			k = &e.Kernels[len(e.Kernels)-1]
			byLabel[s.Kernel] = k
			lines[s.Kernel] = map[string]*Line{}
			e.firstSample[s.Kernel] = i
		}
		add := func(what string, d time.Duration, f *Figure, src string) {
			l := lines[s.Kernel][what]
			if l == nil {
				l = &Line{What: what}
				lines[s.Kernel][what] = l
			}
			l.N++
			l.Time += d
			switch {
			case f != nil:
				note(l, src+": "+f.Source)
			case src != "":
				note(l, src)
			}
			e.PerSample[i] += d
		}
		if s.Lab {
			f := r.Boot("lab", s.LabClass)
			add(LineLab, seconds(f.Value), &f, fmt.Sprintf("%s under %s", fmtDur(seconds(f.Value)), s.LabClass))
		}
		class := s.Class
		if s.Boot {
			f := r.Boot(GuestOf(s.GuestKernel), class) // whichever cell boots it
			src := fmt.Sprintf("%s each, %s", fmtDur(seconds(f.Value)), class)
			if s.GuestKernel != "" {
				src += ", guest Linux " + s.GuestKernel
			}
			add(LineBoots, seconds(f.Value), &f, src)
		}
		if s.Restore {
			f := r.Boot(WorkloadRestore, class)
			add(LineRestores, seconds(f.Value), &f, fmt.Sprintf("%s each, %s", fmtDur(seconds(f.Value)), class))
		}
		if s.Packets == 0 {
			add(LineWindows, s.Warmup+s.Window, nil, "warmup + duration from the scenario")
		} else {
			f := r.PPS(s.Workload, class)
			d := s.Warmup + countTime(s.Packets, f.Value, s.Window)
			add(LineCounted, d, &f, fmt.Sprintf("%s at %s, %s", s.Workload, fmtRate(f.Value), class))
			lines[s.Kernel][LineCounted].Packets += s.Packets
		}
		o := r.Overhead(s.Workload, class)
		add(LineOverhead, seconds(o.Value), &o, fmt.Sprintf("%s each, %s", fmtDur(seconds(o.Value)), class))
	}
	for i := range e.Kernels {
		k := &e.Kernels[i]
		for _, what := range lineOrder {
			if l := lines[k.Label][what]; l != nil {
				k.Lines = append(k.Lines, *l)
				k.Total += l.Time
			}
		}
		e.Total += k.Total
	}
	return e
}

// countTime is how long packets take at pps, capped by limit (> 0).
func countTime(packets uint64, pps float64, limit time.Duration) time.Duration {
	d := time.Duration(float64(packets) / max(pps, 1e-3) * float64(time.Second))
	if limit > 0 && (d > limit || d < 0) {
		return limit
	}
	if d < 0 { // beyond 292 years
		return time.Duration(1<<63 - 1)
	}
	return d
}

func note(l *Line, src string) {
	for _, s := range l.Sources {
		if s == src {
			return
		}
	}
	l.Sources = append(l.Sources, src)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Left is the estimated time of the samples from index done on.
func (e *Estimate) Left(done int) time.Duration {
	var left time.Duration
	for _, d := range e.PerSample[min(max(done, 0), len(e.PerSample)):] {
		left += d
	}
	return left
}

// ETA scales left, the estimate of the samples still to run, by how the
// samples measured so far compared with theirs: they took elapsed
// against estDone estimated. Before any (estDone 0) it is left.
func ETA(left, estDone, elapsed time.Duration) time.Duration {
	if estDone <= 0 || elapsed <= 0 {
		return left
	}
	return time.Duration(float64(left) * float64(elapsed) / float64(estDone))
}
