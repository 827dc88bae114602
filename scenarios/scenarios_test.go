package scenarios

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/golden"
	"github.com/vnetbench/vnetbench/internal/schema"
	_ "github.com/vnetbench/vnetbench/internal/workload/all"
	"github.com/vnetbench/vnetbench/internal/workload/iperf3"
	"github.com/vnetbench/vnetbench/internal/workload/pktgen"
	"github.com/vnetbench/vnetbench/internal/workload/trafgen"
)

var (
	// README.md is the user's documentation, not test data: a general
	// -update (go test ./... -update) must not rewrite it.
	updateReadme = flag.Bool("update-readme", false, "rewrite docs/scenarios.md's scenario reference section")
)

// pk is a pktgen cell's section (nil for other workloads).
func pk(c Cell) *pktgen.Config {
	p, _ := c.Generator.Config.(*pktgen.Config)
	return p
}

func mustLoad(t *testing.T, src string) *Scenario {
	t.Helper()
	s, err := Load("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return s
}

func names(cells []Cell) []string {
	var out []string
	for _, c := range cells {
		out = append(out, c.Kernel.Label+" "+c.Name)
	}
	return out
}

func TestBuiltins(t *testing.T) {
	want := map[string]int{ // cells per kernel
		"quickstart": 2, "thread-pktgen": 2, "thread-pktgen-mq": 2, "thread-pktgen-vhost-pin0": 4,
		"thread-iperf3": 4, "thread-sweep": 24, "lab-pktgen": 4, "afxdp-tun": 12, "lab-afxdp-tun": 12,
		"vsock-sockmap": 2, "vsock-sockmap-loopback": 2, "latency-quickstart": 4, "lab-latency": 54, "tcp-rr": 2, "xdp-redirect": 1, "lab-xdp-redirect": 2, "lab-many-senders": 16, "lab-review": 14,
	}
	bs := Builtins()
	if len(bs) != len(want) {
		t.Errorf("%d built-ins, want %d: %v", len(bs), len(want), bs)
	}
	for _, b := range bs {
		s, err := Resolve(b.Name)
		if err != nil {
			t.Fatalf("%s: %v", b.Name, err)
		}
		if s.Name != b.Name {
			t.Errorf("built-in file %s has name: %s", b.Name, s.Name)
		}
		if b.Description == "" || strings.Contains(b.Description, "\n") {
			t.Errorf("%s: want a one-line description, got %q", b.Name, b.Description)
		}
		cells := s.Expand()
		if n := len(cells) / len(s.Kernels); n != want[b.Name] {
			t.Errorf("%s: %d cells per kernel, want %d", b.Name, n, want[b.Name])
		}
		seen := map[string]bool{}
		for _, c := range cells {
			key := c.Kernel.Label + " " + c.Name
			if seen[key] {
				t.Errorf("%s: duplicate cell %s", b.Name, key)
			}
			seen[key] = true
			if p := pk(c); p != nil && (p.Burst > 1 || p.CloneSkb > 0) {
				t.Errorf("%s: %s would be rejected by a tap", b.Name, c.Name)
			}
		}
	}
}

func TestQuickstartFitsThisMachine(t *testing.T) {
	s, err := LoadBuiltin("quickstart")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckHost(Host{NumCPU: 2}); err != nil {
		t.Errorf("quickstart must fit a 2-CPU machine: %v", err)
	}
	var traffic time.Duration
	for _, c := range Order(s.Expand(), 1) {
		if c.Backend != "tap" || pk(c) != nil || c.Qdisc == "fq_codel" {
			t.Errorf("quickstart cell %s needs vhost-net, pktgen or fq_codel", c.Name)
		}
		if c.Perf.Record != nil {
			t.Errorf("quickstart records perf: too slow for a demo")
		}
		switch c.Generator.Kind {
		case "iperf3":
			traffic += c.Warmup + c.Generator.Config.(*iperf3.Config).Duration
		case "trafgen":
			traffic += c.Warmup + c.Generator.Config.(*trafgen.Config).Duration
		}
	}
	// Budget: under ~2 minutes on 2 TCG cores, with ~8 s guest boot and a
	// few seconds of setup per run.
	if traffic > 40*time.Second {
		t.Errorf("quickstart traffic time %s; keep it short", traffic)
	}
}

func TestLabPktgen(t *testing.T) {
	s, err := LoadBuiltin("lab-pktgen")
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{s.Kernels[0].Label, s.Kernels[1].Label}; !slices.Equal(got, []string{"stock", "patched"}) {
		t.Errorf("kernels %v", got)
	}
	// Both built from Debian's linux-source-6.1, patched with the shipped
	// series, which has a patch.
	for _, k := range s.Kernels {
		if k.Source != "debian:6.1" || k.Running() || !k.Builds() {
			t.Errorf("kernel %+v: want source debian:6.1", k)
		}
	}
	if !slices.Equal(s.Kernels[0].Patches, nil) || !slices.Equal(s.Kernels[1].Patches, []string{"series:tun-backpressure"}) {
		t.Errorf("patches: stock %v, patched %v", s.Kernels[0].Patches, s.Kernels[1].Patches)
	}
	if ps, err := SeriesPatches("tun-backpressure"); err != nil || len(ps) != 1 || !strings.Contains(string(ps[0].Data), "Subject: [PATCH] tun: stop the tx queue") {
		t.Errorf("series tun-backpressure: %d patches, %v", len(ps), err)
	}
	// Lab kernels run in VMs, so the host's CPU count does not limit them.
	if err := s.CheckHost(Host{NumCPU: 1}); err != nil {
		t.Errorf("CheckHost on a lab-only scenario: %v", err)
	}
	// kpktgend_0..3: the lab VMs get 4 vCPUs.
	if got := s.CPUsNeeded(); got != 4 {
		t.Errorf("CPUsNeeded = %d, want 4", got)
	}
	// The thread's pinned tables: sample01 for 1 thread, sample02 for 4
	// on the single-queue tap of a 1-vCPU guest, vhost on CPU 0.
	var got []string
	for _, c := range s.Expand() {
		p := pk(c)
		if p.Count != 0 || p.Duration != 3*time.Second || c.Queues != 1 || c.Guest.VCPUs != 1 || (c.Backend == "tap+vhost") != slices.Equal(c.Pin.Vhost, []int{0}) {
			t.Errorf("%s: %+v, queues %d, vcpus %d, vhost pin %v", c.Name, p, c.Queues, c.Guest.VCPUs, c.Pin.Vhost)
		}
		got = append(got, fmt.Sprintf("%s %d", p.Mode, p.Threads))
	}
	slices.Sort(got)
	if want := []string{"multiqueue 4", "multiqueue 4", "multiqueue 4", "multiqueue 4", "simple 1", "simple 1", "simple 1", "simple 1"}; !slices.Equal(got, want) {
		t.Errorf("modes and threads %v, want %v", got, want)
	}
}

func TestExpandAndNames(t *testing.T) {
	s := mustLoad(t, `
name: m
kernels: [{label: stock}, {label: patched, image: /b/bzImage, modules: /b/mods}]
backend: [tap, tap+vhost]
qdisc: fq_codel
pin: {vhost: [none, 0]}
guest: {memory: [512MiB, 1GiB]}
generator:
  pktgen: {mode: multiqueue, threads: [1, 4], burst: [0, default]}
  iperf3: {parallel: [1, 4]}
`)
	got := strings.Join(names(s.Expand()), "\n") + "\n"
	golden.Check(t, "expand-names.golden", got)
	cells := s.Expand()
	// 2 kernels x ((tap: 2 mem x 4 pktgen + 2 iperf3... ) see golden), and the
	// kernel is the column axis, not part of the name.
	if cells[0].Kernel.Label != "stock" || cells[len(cells)-1].Kernel.Label != "patched" {
		t.Errorf("kernels not outermost: %s ... %s", cells[0].Kernel.Label, cells[len(cells)-1].Kernel.Label)
	}
	for _, c := range cells {
		if strings.Contains(c.Name, "stock") || strings.Contains(c.Name, "patched") {
			t.Errorf("kernel label in cell name %q", c.Name)
		}
		if c.Backend == "tap" && c.Pin.Vhost != nil {
			t.Errorf("%s: vhost pin on a plain tap", c.Name)
		}
		if _, ok := c.Axes["backend"]; !ok || c.Axes["generator"] != c.Generator.Kind {
			t.Errorf("%s: axes %v", c.Name, c.Axes)
		}
		// The queue count does not follow the threads: a single-queue
		// tap unless the file says otherwise.
		if c.Queues != 1 {
			t.Errorf("%s: queues %d, want the default 1", c.Name, c.Queues)
		}
	}
	// Expand returns copies: changing one must not change the scenario.
	pk(cells[0]).Count = 1
	cells[0].Axes["backend"] = "x"
	again := s.Expand()
	if pk(again[0]).Count == 1 || again[0].Axes["backend"] == "x" {
		t.Error("Expand shares memory between calls")
	}
	var keys []string
	for _, a := range s.Axes {
		keys = append(keys, a.Key)
	}
	want := []string{"backend", "pin.vhost", "guest.memory", "generator", "generator.pktgen.threads", "generator.pktgen.burst", "generator.iperf3.parallel"}
	if !slices.Equal(keys, want) {
		t.Errorf("axes %v, want %v", keys, want)
	}
}

func TestDefaults(t *testing.T) {
	s := mustLoad(t, "generator: {pktgen: {}}\n")
	if s.Name != "t" || len(s.Kernels) != 1 || !s.Kernels[0].Running() || s.Kernels[0].Label != "running" {
		t.Errorf("scenario defaults: %+v", s)
	}
	c := s.Expand()[0]
	p := pk(c)
	if c.Backend != "tap" || c.Queues != 1 || c.Qdisc != "" || c.TapName != "vnbt0" || c.Isolation != "netns" ||
		c.Guest.VCPUs != 1 || c.Guest.MemoryMiB != 1024 || c.Guest.Sink != "stack" || c.Repetitions != 5 ||
		p.Mode != "simple" || p.Threads != 1 || p.Count != 100000 || p.PktSize != 60 || p.Burst != -1 ||
		c.Timeouts.Boot != 3*time.Minute || c.Timeouts.Traffic != 10*time.Minute ||
		c.Timeouts.Cell != 3*time.Minute+time.Minute+10*time.Minute+30*time.Second || c.Perf.Stat != nil {
		t.Errorf("defaults: %+v pktgen %+v", c, *p)
	}
	if c.Name != "tap/pktgen-t1" {
		t.Errorf("name %q", c.Name)
	}
	// duration-bounded pktgen: count defaults to 0 (unbounded).
	c = mustLoad(t, "generator: {pktgen: {duration: 30s}}\nwarmup: 2s\n").Expand()[0]
	if pk(c).Count != 0 || c.Timeouts.Traffic != 92*time.Second {
		t.Errorf("duration pktgen: count %d traffic %s", pk(c).Count, c.Timeouts.Traffic)
	}
	// perf targets: generator resolves per cell, absent ones drop out.
	s = mustLoad(t, "backend: [tap, tap+vhost]\ngenerator: {trafgen: {}}\nperf: {stat: {}, record: {targets: [vhost]}}\n")
	for _, c := range s.Expand() {
		want := []string{"trafgen", "vcpu"}
		if c.Backend == "tap+vhost" {
			want = []string{"trafgen", "vhost", "vcpu"}
		}
		if !slices.Equal(c.Perf.Stat.Targets, want) {
			t.Errorf("%s: stat targets %v, want %v", c.Name, c.Perf.Stat.Targets, want)
		}
		if (c.Perf.Record != nil) != (c.Backend == "tap+vhost") {
			t.Errorf("%s: record %+v", c.Name, c.Perf.Record)
		}
	}
}

func TestValues(t *testing.T) {
	c := mustLoad(t, `
guest: {memory: 2048MiB, vcpus: 2}
pin: {vcpu: "2,0-1", generator: 3, vhost: none}
queues: 3
generator: {iperf3: {duration: 1m, omit: 2s, bitrate: 1G}}
`).Expand()[0]
	if c.Guest.MemoryMiB != 2048 || !slices.Equal(c.Pin.VCPU, []int{0, 1, 2}) || !slices.Equal(c.Pin.Generator, []int{3}) ||
		c.Pin.Vhost != nil || c.Queues != 3 || c.Generator.Config.(*iperf3.Config).Duration != time.Minute {
		t.Errorf("%+v", c)
	}
	for in, want := range map[string]string{"0": "0", "0-3": "0-3", "3,1,2": "1-3", "0,2,4-5": "0,2,4-5", "none": "none"} {
		cpus, msg := schema.ParseCPUList(in)
		if msg != "" || schema.FormatCPUs(cpus) != want {
			t.Errorf("cpulist %q: %v %q", in, cpus, msg)
		}
	}
	for in, want := range map[string]int{"1GiB": 1024, "512MiB": 512, "1048576KiB": 1024} {
		if got, msg := schema.ParseMiB(in); got != want || msg != "" {
			t.Errorf("memory %q = %d %q", in, got, msg)
		}
	}
}

func TestOrder(t *testing.T) {
	s := mustLoad(t, "backend: [tap, tap+vhost]\nqdisc: [fq_codel, noqueue]\nrepetitions: 5\ngenerator: {iperf3: {}}\n")
	cells := s.Expand()
	a, b := Order(cells, 42), Order(cells, 42)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different order")
	}
	if len(a) != 4*5 {
		t.Fatalf("%d runs, want 20", len(a))
	}
	// rounds: every cell once per round, reps in order
	for r := range 5 {
		round := a[r*4 : r*4+4]
		seen := map[string]bool{}
		for _, c := range round {
			if c.Rep != r {
				t.Errorf("round %d has rep %d", r, c.Rep)
			}
			seen[c.Name] = true
		}
		if len(seen) != 4 {
			t.Errorf("round %d: %v", r, names(round))
		}
	}
	// shuffled: not every round in Expand order, and another seed differs
	sameAsExpand := 0
	for r := range 5 {
		if slices.Equal(names(a[r*4:r*4+4]), names(cells)) {
			sameAsExpand++
		}
	}
	if sameAsExpand == 5 {
		t.Error("no round is shuffled")
	}
	if reflect.DeepEqual(names(Order(cells, 43)), names(a)) {
		t.Error("seeds 42 and 43 give the same order")
	}
	// Gathered by guest: a round boots each backend once (2 boots), and a
	// round starts with the guest the previous one ended with, so the
	// whole order boots at most 1 + 5 times instead of up to 20.
	boots := 0
	for i := range a {
		if i == 0 || a[i].GuestKey() != a[i-1].GuestKey() {
			boots++
		}
		if i%4 == 3 && i+1 < len(a) && a[i+1].GuestKey() != a[i].GuestKey() {
			t.Errorf("round %d does not start with the guest round %d ended with", i/4+1, i/4)
		}
	}
	if boots > 6 {
		t.Errorf("%d boots for 5 rounds of 2 guests, want at most 6", boots)
	}
	golden.Check(t, "order-seed42.golden", strings.Join(names(a), "\n")+"\n")
}

func TestCheckHost(t *testing.T) {
	s := mustLoad(t, "backend: tap+vhost\npin: {vhost: [0, 3]}\ngenerator: {pktgen: {mode: multiqueue, threads: 2}}\n")
	if err := s.CheckHost(Host{NumCPU: 4}); err != nil {
		t.Errorf("4 CPUs: %v", err)
	}
	err := s.CheckHost(Host{NumCPU: 2})
	var se *Error
	if !errors.As(err, &se) || se.Line != 2 || se.Col != 18 || !errors.Is(err, fault.ErrInput) {
		t.Errorf("2 CPUs: %#v", err)
	}
	if err := s.CheckHost(Host{}); err != nil {
		t.Errorf("NumCPU 0 skips: %v", err)
	}
	if got := s.CPUsNeeded(); got != 4 {
		t.Errorf("CPUsNeeded %d, want 4", got)
	}
}

func TestLoadFileRelativePaths(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", "/home/u")
	path := filepath.Join(dir, "k.yaml")
	src := "kernels: [{label: p, image: bz/bzImage, modules: /abs/mods}, {label: q, image: ~/linux/bzImage}]\ngenerator: {pktgen: {mode: script, script_dir: linux}}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Expand()[0]
	if s.Kernels[0].Image != filepath.Join(dir, "bz/bzImage") || s.Kernels[0].Modules != "/abs/mods" ||
		s.Kernels[1].Image != "/home/u/linux/bzImage" || pk(c).ScriptDir != filepath.Join(dir, "linux") {
		t.Errorf("paths: %+v %q", s.Kernels, pk(c).ScriptDir)
	}
	// A copy (a lab VM's run reads one in the run directory) resolves
	// relative paths against the original file's directory.
	cp := filepath.Join(t.TempDir(), "scenario.yaml")
	os.WriteFile(cp, []byte(src), 0o644)
	if s, err = LoadFileFrom(cp, dir); err != nil {
		t.Fatal(err)
	}
	if got := pk(s.Expand()[0]).ScriptDir; got != filepath.Join(dir, "linux") {
		t.Errorf("copy: script_dir %q, want %q", got, filepath.Join(dir, "linux"))
	}
}

func TestParamsCoverEveryKey(t *testing.T) {
	c := mustLoad(t, "generator: {pktgen: {}}\nperf: {stat: {}}\n").Expand()[0]
	keys := map[string]bool{}
	for _, p := range c.Params() {
		keys[p.Key] = true
	}
	for _, k := range []string{"backend", "queues", "pin.vhost", "guest.memory", "generator.pktgen.burst", "perf.stat.events", "perf.record", "timeouts.cell"} {
		if !keys[k] {
			t.Errorf("Params lacks %s", k)
		}
	}
}

// TestReadmeReference keeps docs/scenarios.md's scenario reference equal to
// Reference() (go test ./scenarios -run TestReadmeReference -update-readme
// rewrites the section between the markers).
func TestReadmeReference(t *testing.T) {
	const begin, end = "<!-- BEGIN SCENARIO REFERENCE -->", "<!-- END SCENARIO REFERENCE -->"
	path := filepath.Join("..", "docs", "scenarios.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var bt strings.Builder
	bt.WriteString("\n### Built-in scenarios\n\n`vnetbench list` shows them, `vnetbench plan NAME` shows their cells; the YAML is in `scenarios/builtin/`.\n\n| name | what |\n|---|---|\n")
	for _, b := range Builtins() {
		fmt.Fprintf(&bt, "| `%s` | %s |\n", b.Name, strings.ReplaceAll(b.Description, "|", `\|`))
	}
	section := begin + "\n## Scenario reference\n\n" + Reference() + bt.String() + end
	s := string(readme)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if *updateReadme {
		if i < 0 || j < i {
			s = strings.TrimRight(s, "\n") + "\n\n" + section + "\n"
		} else {
			s = s[:i] + section + s[j+len(end):]
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if i < 0 || j < i {
		t.Fatalf("docs/scenarios.md lacks the %s ... %s section (go test ./scenarios -run TestReadmeReference -update-readme adds it)", begin, end)
	}
	if got := s[i : j+len(end)]; got != section {
		t.Errorf("docs/scenarios.md scenario reference is stale (go test ./scenarios -run TestReadmeReference -update-readme rewrites it):\n%s", golden.Diff(section, got))
	}
}

func TestWarnings(t *testing.T) {
	s := mustLoad(t, "qdisc: fq_codel\nbackend: [tap, tap+vhost]\ngenerator:\n  pktgen: {}\n  iperf3: {protocol: udp}\n")
	want := []string{
		`t.yaml:1:8: qdisc fq_codel is attached but pktgen's default xmit mode (start_xmit) sends past it; set generator.pktgen.xmit_mode: queue_xmit to send through it, or xmit_mode: start_xmit to say that is meant`,
		`t.yaml:5:22: iperf3 UDP without bitrate sends at iperf3's default 1 Mbit/s; set generator.iperf3.bitrate (e.g. 10G)`,
	}
	if !slices.Equal(s.Warnings, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(s.Warnings, "\n"), strings.Join(want, "\n"))
	}
	// Saying start_xmit is saying the qdisc is only attached.
	if s := mustLoad(t, "qdisc: fq_codel\ngenerator: {pktgen: {xmit_mode: start_xmit}}\n"); len(s.Warnings) > 0 {
		t.Errorf("explicit start_xmit warns: %v", s.Warnings)
	}
	for _, b := range Builtins() {
		if s, _ := LoadBuiltin(b.Name); len(s.Warnings) > 0 {
			t.Errorf("built-in %s warns: %v", b.Name, s.Warnings)
		}
	}
}

// mode: [simple, script] compares the harness's own pktgen writes with the
// kernel's script: script_dir and script belong to the script cells only.
func TestScriptModeAxis(t *testing.T) {
	s := mustLoad(t, "generator: {pktgen: {mode: [simple, script], script_dir: /src/linux, count: 1000}}\n")
	cells := s.Expand()
	if len(cells) != 2 {
		t.Fatalf("%d cells, want 2", len(cells))
	}
	for _, c := range cells {
		p := pk(c)
		switch p.Mode {
		case "script":
			if p.ScriptDir != "/src/linux" || p.Script != "pktgen_sample01_simple.sh" {
				t.Errorf("script cell: script_dir %q script %q", p.ScriptDir, p.Script)
			}
		case "simple":
			if p.ScriptDir != "" || p.Script != "" {
				t.Errorf("simple cell keeps script_dir %q script %q", p.ScriptDir, p.Script)
			}
		}
	}
	// Without script in the list, script_dir is still a mistake.
	if _, err := Load("x.yaml", []byte("generator: {pktgen: {mode: [simple, multiqueue], script_dir: /src/linux}}\n")); err == nil ||
		!strings.Contains(err.Error(), "only used with mode: script") {
		t.Errorf("script_dir without script mode: %v", err)
	}
}

// TestDebianVersions: both Debian ABI schemes and series validate, for the
// kernels under test and the guest kernel.
func TestDebianVersions(t *testing.T) {
	for _, v := range []string{"6.1", "6.12", "6.1.0", "6.1.0-47", "6.12.117+deb12", "6.12.57+deb13"} {
		y := "kernels: [{label: a, debian: \"" + v + "\"}]\nguest: {kernel: {debian: \"" + v + "\"}}\ngenerator: {iperf3: {}}\n"
		s, err := Load("debian.yaml", []byte(y))
		if err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		if g := s.Expand()[0].Guest.Kernel; s.Kernels[0].Debian != v || g.Debian != v {
			t.Errorf("%s: kernels %+v guest %+v", v, s.Kernels, g)
		}
	}
	for _, v := range []string{"6.12.117+bpo", "6.12.117+deb12-amd64", "bookworm", "6"} {
		y := "kernels: [{label: a, debian: \"" + v + "\"}]\ngenerator: {iperf3: {}}\n"
		if _, err := Load("debian.yaml", []byte(y)); err == nil || !strings.Contains(err.Error(), "Debian kernel version") {
			t.Errorf("%s: err = %v, want a Debian version error", v, err)
		}
	}
}

// The tap's queue count is independent of the pktgen thread count: one
// queue by default (4 sample02 threads then share queue 0), auto = one per
// thread, any count allowed.
func TestQueuesIndependentOfThreads(t *testing.T) {
	for _, tc := range []struct {
		queues string
		want   []int // per threads 1, 4
	}{
		{"", []int{1, 1}},
		{"queues: 1\n", []int{1, 1}},
		{"queues: 2\n", []int{2, 2}},
		{"queues: auto\n", []int{1, 4}},
	} {
		s := mustLoad(t, tc.queues+"generator: {pktgen: {mode: multiqueue, threads: [1, 4]}}\n")
		cells := s.Expand()
		if len(cells) != 2 {
			t.Fatalf("%q: %d cells", tc.queues, len(cells))
		}
		for i, c := range cells {
			if c.Queues != tc.want[i] || c.TapQueues() != tc.want[i] {
				t.Errorf("%q, %d threads: queues %d (tap %d), want %d", tc.queues, pk(c).Threads, c.Queues, c.TapQueues(), tc.want[i])
			}
		}
	}
}

// Combinations of axis values that resolve to one cell run once, with a
// note naming the axis; pin.vhost on a plain tap stays silent (documented).
func TestSameCellNotes(t *testing.T) {
	s := mustLoad(t, "queues: [1, auto]\nbackend: [tap, tap+vhost]\npin: {vhost: [none, 0]}\ngenerator: {pktgen: {mode: multiqueue, threads: [1, 4]}}\n")
	// tap: q1/qauto(=1) for t1 are one cell, t4 two; tap+vhost: the same, twice (pins).
	if n := len(s.Expand()); n != 3+6 {
		t.Errorf("%d cells, want 9: %v", n, names(s.Expand()))
	}
	want := []string{"queues 1 and auto resolve to the same cells (tap/pktgen-t1/q1, tap+vhost/pktgen-t1/q1/vhost-unpinned, tap+vhost/pktgen-t1/q1/vhost-pin0): each runs once"}
	if !slices.Equal(s.Notes, want) {
		t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(s.Notes, "\n"), strings.Join(want, "\n"))
	}
	s = mustLoad(t, "backend: [tap, tap+vhost]\npin: {vhost: [none, 0]}\ngenerator: {pktgen: {}}\n")
	if len(s.Notes) != 0 || len(s.Expand()) != 3 {
		t.Errorf("pin.vhost on a plain tap: notes %v, cells %v", s.Notes, names(s.Expand()))
	}
}

// HostWarnings: a pinned vhost worker or vCPU on a kpktgend thread's CPU,
// and more busy threads than CPUs, each once with the cells it concerns.
func TestHostWarnings(t *testing.T) {
	s := mustLoad(t, `backend: [tap, tap+vhost]
pin: {vhost: 0}
guest: {vcpus: 1}
generator: {pktgen: {mode: multiqueue, threads: [1, 4]}}
`)
	got := s.HostWarnings(Host{NumCPU: 4})
	want := []string{
		"t.yaml:4:53: 4 kpktgend threads, 1 QEMU I/O thread and 1 vCPU are 6 busy threads on 4 CPUs: they take turns on the CPUs, and the numbers include that (cell tap/pktgen-t4)",
		"t.yaml:2:14: pin.vhost: the vhost-net worker is pinned to CPU 0, where kpktgend_0 runs (bound to CPU 0): the two share that CPU, and the numbers include them taking turns (cells tap+vhost/pktgen-t1/vhost-pin0, tap+vhost/pktgen-t4/vhost-pin0)",
		"t.yaml:4:53: 4 kpktgend threads, 1 vhost-net worker and 1 vCPU are 6 busy threads on 4 CPUs: they take turns on the CPUs, and the numbers include that (cell tap+vhost/pktgen-t4/vhost-pin0)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Enough CPUs, nothing shared: no warning. A vCPU pinned (with exactly
	// guest.vcpus CPUs, one each) onto kpktgend_1's CPU: one.
	s = mustLoad(t, "backend: tap+vhost\npin: {vhost: 3, vcpu: \"1-2\"}\nguest: {vcpus: 2}\ngenerator: {pktgen: {mode: multiqueue, threads: 2}}\n")
	got = s.HostWarnings(Host{NumCPU: 8})
	if len(got) != 1 || !strings.Contains(got[0], "pin.vcpu: vCPU 0 is pinned to CPU 1, where kpktgend_1 runs") {
		t.Errorf("vCPU on kpktgend_1: %q", got)
	}
	// A scenario whose kernels all run in lab VMs is not counted against
	// this machine's CPUs.
	s = mustLoad(t, "kernels: [{label: stock, debian: \"6.1\"}]\ngenerator: {pktgen: {mode: multiqueue, threads: 4}}\n")
	if got := s.HostWarnings(Host{NumCPU: 2}); len(got) != 0 {
		t.Errorf("lab kernels: %q", got)
	}
}

// mode auto (the default) is the thread's recipe: sample01 (simple) for
// one thread, sample02 (multiqueue) for more; script mode picks the
// matching sample script the same way.
func TestPktgenModeAuto(t *testing.T) {
	s := mustLoad(t, "generator: {pktgen: {threads: [1, 4]}}\n")
	var got []string
	for _, c := range s.Expand() {
		got = append(got, pk(c).Mode+" "+c.Axes["generator.pktgen.mode"])
	}
	if strings.Join(got, ",") != "simple simple,multiqueue multiqueue" {
		t.Errorf("modes %v", got)
	}
	s = mustLoad(t, "generator: {pktgen: {mode: script, script_dir: /src/linux, threads: [1, 4]}}\n")
	got = nil
	for _, c := range s.Expand() {
		got = append(got, pk(c).Script)
	}
	if strings.Join(got, ",") != "pktgen_sample01_simple.sh,pktgen_sample02_multiqueue.sh" {
		t.Errorf("scripts %v", got)
	}
}

// TestComparisonBuiltinsCallBigChanges: a built-in whose point is a
// comparison (two or more kernels) runs at least 3 repetitions by
// default, the plan's first look, so that its tables call a change far
// outside the noise DIFFERENT instead of "-100.00% (1 run)" (issue 33
// item 3; docs/compare.md).
func TestComparisonBuiltinsCallBigChanges(t *testing.T) {
	for _, b := range Builtins() {
		s, err := Resolve(b.Name)
		if err != nil {
			t.Fatalf("%s: %v", b.Name, err)
		}
		if len(s.Kernels) < 2 {
			continue
		}
		for _, c := range s.Expand() {
			if c.Repetitions < 3 {
				t.Errorf("%s compares %d kernels, %s with %d repetitions by default; want at least 3", b.Name, len(s.Kernels), c.Name, c.Repetitions)
				break
			}
		}
	}
}
