package estimate

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// threadPktgen is thread-pktgen on one lab kernel: 2 cells x 5
// repetitions of 100M packets, one guest boot per round.
func threadPktgen(class Class) []Sample {
	var out []Sample
	for i := range 10 {
		out = append(out, Sample{Kernel: "stock", Workload: "pktgen", Class: class, Lab: i == 0, LabClass: TCG,
			Boot: i%2 == 0, Packets: 100e6})
	}
	return out
}

func TestOfDefaults(t *testing.T) {
	e := Of(threadPktgen(TCGNested), &Table{})
	// 1e9 packets at 1 Kpps alone is 1e6 s.
	if e.Total < 1e6*time.Second || e.Total > 1e6*time.Second+2*time.Hour {
		t.Fatalf("total %v, want 1e6 s and boots", e.Total)
	}
	k := e.Kernels[0]
	want := []string{LineLab, LineBoots, LineCounted, LineOverhead}
	if len(k.Lines) != len(want) {
		t.Fatalf("lines %+v", k.Lines)
	}
	for i, l := range k.Lines {
		if l.What != want[i] {
			t.Errorf("line %d is %q, want %q", i, l.What, want[i])
		}
	}
	if k.Lines[1].N != 5 || k.Lines[1].Time != 15*time.Minute {
		t.Errorf("boots %+v, want 5 x 3 min", k.Lines[1])
	}
	if k.Lines[2].Packets != 1e9 || !strings.Contains(k.Lines[2].Sources[0], "pktgen at 1.00 Kpps, tcg-nested: default") {
		t.Errorf("count-bound line %+v", k.Lines[2])
	}
	var sum time.Duration
	for _, d := range e.PerSample {
		sum += d
	}
	if sum != e.Total {
		t.Errorf("per-sample times add up to %v, total %v", sum, e.Total)
	}
}

// A window's duration caps a count-bound window; a duration-bound cell
// takes its warmup and window from the scenario.
func TestOfWindows(t *testing.T) {
	e := Of([]Sample{
		{Kernel: "running", Workload: "pktgen", Class: TCG, Boot: true, Packets: 100e6, Window: 10 * time.Second},
		{Kernel: "running", Workload: "iperf3", Class: TCG, Warmup: time.Second, Window: 5 * time.Second},
	}, &Table{})
	k := e.Kernels[0]
	got := map[string]time.Duration{}
	for _, l := range k.Lines {
		got[l.What] = l.Time
	}
	want := map[string]time.Duration{LineBoots: 20 * time.Second, LineCounted: 10 * time.Second, LineWindows: 6 * time.Second, LineOverhead: 20 * time.Second}
	for w, d := range want {
		if got[w] != d {
			t.Errorf("%s: %v, want %v", w, got[w], d)
		}
	}
}

func TestTableMeasuredWins(t *testing.T) {
	tab := &Table{Entries: map[string]*Entry{}}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	tab.Add([]Observation{{Workload: "pktgen", Class: TCGNested, Boots: []float64{100, 120}, PPS: []float64{3000, 5000}, Overhead: []float64{4}}}, now)
	if f := tab.PPS("pktgen", TCGNested); f.Value != 4000 || f.Source != "measured here, 2 windows, 2026-12-01" {
		t.Errorf("PPS = %+v", f)
	}
	if f := tab.Boot("pktgen", TCGNested); f.Value != 110 {
		t.Errorf("Boot = %+v", f)
	}
	if f := tab.PPS("trafgen", TCGNested); f.Source != "default" || f.Value != Defaults[TCGNested].PPS {
		t.Errorf("another workload's rate = %+v, want the default", f)
	}
	// Its guests boot as pktgen's did; a lab VM's boot is not a guest's.
	if f := tab.Boot("trafgen", TCGNested); f.Value != 110 || f != tab.Boot(WorkloadGuest, TCGNested) {
		t.Errorf("another workload's boot = %+v, want pktgen's", f)
	}
	if f := tab.Boot("trafgen", KVMNested); f.Source != "default" {
		t.Errorf("boot under another class = %+v, want the default", f)
	}
	if f := tab.Boot("lab", TCG); f.Value != Defaults[TCG].LabBoot.Seconds() {
		t.Errorf("lab boot = %+v", f)
	}
	// The average follows a changed host: after many new values the old
	// ones weigh little.
	for range 100 {
		tab.Add([]Observation{{Workload: "pktgen", Class: TCGNested, PPS: []float64{1000}}}, now)
	}
	if f := tab.PPS("pktgen", TCGNested); f.Value > 1100 {
		t.Errorf("PPS after 100 windows at 1000: %v", f.Value)
	}
}

func TestTableFile(t *testing.T) {
	dir := t.TempDir()
	tab, err := Load(dir)
	if err != nil || len(tab.Entries) != 0 {
		t.Fatalf("missing file: %v %v", tab, err)
	}
	tab.Add([]Observation{{Workload: "iperf3", Class: TCG, Boots: []float64{7}}}, time.Now())
	if err := tab.Save(dir); err != nil {
		t.Fatal(err)
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if f := back.Boot("iperf3", TCG); f.Value != 7 || !strings.HasPrefix(f.Source, "measured here, 1 boot,") {
		t.Errorf("read back %+v", f)
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                           "0 s",
		45 * time.Second:            "45 s",
		89 * time.Second:            "89 s",
		90 * time.Second:            "2 min",
		12 * time.Minute:            "12 min",
		90 * time.Minute:            "1.5 h",
		time.Hour:                   "1 h",
		2 * time.Hour:               "2 h",
		9*time.Hour + 6*time.Minute: "9.1 h",
		92*time.Hour + 20:           "92 h",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestETA(t *testing.T) {
	e := &Estimate{PerSample: []time.Duration{time.Minute, time.Minute, 2 * time.Minute}}
	if got := e.Left(0); got != 4*time.Minute {
		t.Errorf("Left(0) = %v", got)
	}
	if got := ETA(e.Left(0), 0, 0); got != 4*time.Minute {
		t.Errorf("ETA before any sample = %v, want the estimate", got)
	}
	// The first sample took twice its estimate: the rest will too.
	if got := ETA(e.Left(1), time.Minute, 2*time.Minute); got != 6*time.Minute {
		t.Errorf("ETA after a slow sample = %v, want 6m", got)
	}
	if got := e.Left(3); got != 0 {
		t.Errorf("Left(3) = %v", got)
	}
}

func TestWrite(t *testing.T) {
	var b bytes.Buffer
	Of(threadPktgen(TCGNested), &Table{}).Write(&b, "", nil)
	out := b.String()
	for _, want := range []string{
		"estimate: about 278 h in all\n",
		"  kernel stock: about 278 h\n",
		"    lab VM boot ",
		"    guest boots                          x5      15 min  [3 min each, tcg-nested: default]\n",
		"    count-bound windows (1G packets)     x10      278 h  [pktgen at 1.00 Kpps, tcg-nested: default]\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestNested(t *testing.T) {
	for c, want := range map[Class]Class{TCG: TCGNested, KVM: KVMNested, TCGNested: TCGNested, KVMNested: KVMNested} {
		if got := Nested(c); got != want {
			t.Errorf("Nested(%s) = %s, want %s", c, got, want)
		}
	}
	if ClassOf("kvm", true) != KVMNested || ClassOf("tcg", false) != TCG {
		t.Error("ClassOf")
	}
}

// A build line longer than 36 characters (plan lab-pktgen's "modules of
// drivers/net/tun.c, 2 kernels") widens the first column of every block:
// its count and time stood out of line with the others'.
func TestWriteAlignsLongLines(t *testing.T) {
	e := Of(threadPktgen(TCGNested), &Table{})
	e.AddBuild([]BuildItem{{What: "modules of drivers/net/tun.c, 2 kernels", N: 2, Kind: "modules"}}, &Table{})
	var b bytes.Buffer
	e.Write(&b, "", nil)
	col := -1
	for _, l := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(l, "    ") {
			continue
		}
		i := strings.Index(l, " x")
		if col >= 0 && i != col {
			t.Errorf("count at column %d, want %d as the line before:\n%s", i, col, b.String())
			break
		}
		col = i
	}
	if col < 0 {
		t.Fatalf("no lines:\n%s", b.String())
	}
}
