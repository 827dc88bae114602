package toy_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/perfparse"
	"github.com/vnetbench/vnetbench/report"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
	guestagent "github.com/vnetbench/vnetbench/vmimages/agent"
)

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// The one registration line.
func TestMain(m *testing.M) {
	workload.Register(toy{})
	os.Exit(m.Run())
}

const scenario = `
name: toy
backend: tap
guest: {vcpus: 1, memory: 128MiB}
generator:
  toy: {rate: [1000, 2000], burst: [1, 40], duration: 500ms}
repetitions: 1
timeouts: {boot: 30s, teardown: 10s}
`

// Validate: the toy's keys decode with their defaults and axes, its
// mistakes are errors at their file:line:col with a suggestion, its rules
// (Resolve) run per cell, and the scenario reference documents it.
func TestToyValidate(t *testing.T) {
	s, err := scenarios.Load("toy.yaml", []byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range s.Expand() {
		names = append(names, c.Name)
		if cfg := c.Generator.Config.(*config); c.Generator.Kind != "toy" || cfg.Duration.Seconds() != 0.5 {
			t.Errorf("%s: %s %+v", c.Name, c.Generator.Kind, cfg)
		}
	}
	want := []string{"tap/toy-r1000/b1", "tap/toy-r1000/b40", "tap/toy-r2000/b1", "tap/toy-r2000/b40"}
	if !slices.Equal(names, want) {
		t.Errorf("cells %q, want %q", names, want)
	}
	for src, msg := range map[string]string{
		"generator: {toy: {rate: 0}}\n":                "t.yaml:1:25: generator.toy.rate: 0 is below the minimum 1",
		"generator: {toy: {rtae: 5}}\n":                `t.yaml:1:19: unknown key "rtae" in generator.toy; did you mean rate? (allowed: rate, burst, duration)`,
		"generator: {toy: {rate: 4, burst: [2, 8]}}\n": "t.yaml:1:39: generator.toy.burst 8 is above rate 4; lower burst",
		"generator: {tyo: {}}\n":                       `t.yaml:1:13: unknown key "tyo" in generator; did you mean toy? (allowed: toy)`,
	} {
		if _, err := scenarios.Load("t.yaml", []byte(src)); err == nil || err.Error() != msg {
			t.Errorf("%q:\n got %v\nwant %s", src, err, msg)
		}
	}
	ref := scenarios.Reference()
	for _, row := range []string{
		"| `generator.toy` | mapping | off |  |  | toyblast sending UDP packets into the tap (a test's workload) |",
		"| `generator.toy.rate` | integer | `1000` | pps | yes | packets per second |",
	} {
		if !strings.Contains(ref, row+"\n") {
			t.Errorf("reference lacks %s", row)
		}
	}
}

// Plan: the cell's parameters and the commands it will run.
func TestToyPlan(t *testing.T) {
	s, err := scenarios.Load("toy.yaml", []byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Expand()[0]
	params := map[string]string{}
	for _, p := range c.Params() {
		params[p.Key] = p.Value
	}
	if params["generator.toy.rate"] != "1000" || params["generator.toy.burst"] != "1" || params["generator.toy.duration"] != "500ms" {
		t.Errorf("params %v", params)
	}
	cmds := strings.Join(runner.Commands(&c, qemu.TCG), "\n")
	if !strings.Contains(cmds, "\nip netns exec vnb-RUNID toyblast --dev vnbt0 --rate 1000 --burst 1 --seconds 0.5") ||
		!strings.Contains(cmds, " -device virtio-rng-pci") {
		t.Errorf("commands:\n%s", cmds)
	}
	if n := runner.NeedsOf(s.Expand()); !slices.Contains(n.Tools, "toyblast") {
		t.Errorf("needs %+v", n)
	}
}

// A fake-executor run: the runner's generator for the cell runs toyblast
// through proc.Fake; what it measured becomes a sample (runner.AddResult)
// whose metrics the results store and the report know from the toy's own
// definitions; the refused burst is an n/a cell.
func TestToyFakeRun(t *testing.T) {
	s, err := scenarios.Load("toy.yaml", []byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	f := &proc.Fake{Handler: func(c proc.Cmd) (string, bool, error) {
		return "sent 5000 packets, 3 errors in 2.5 s\n", true, nil
	}}
	set := &results.Set{Env: map[string]*results.Env{}}
	for _, c := range s.Expand() {
		gen, err := runner.NewGenerator(&c)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		w := &runner.Window{Exec: f, Netns: "vnb-test", Dev: "vnbt0", Artifacts: dir, RelDir: "artifacts/x"}
		sample := results.Sample{Cell: c.Name, Kernel: "running", Axes: c.Axes, WindowS: 2.5,
			Metrics: map[metric.Key]float64{}, Labels: map[string]string{"generator": c.Generator.Kind}}
		if err := gen.Start(t.Context(), w); err != nil {
			why, ok := workload.IsUnsupported(err)
			if !ok {
				t.Fatal(err)
			}
			sample.Unsupported = why
		} else {
			res, err := gen.Wait(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			runner.AddResult(&sample, &c, res)
		}
		set.Samples = append(set.Samples, sample)
	}
	if got := f.Transcript(); !strings.Contains(got, "start ip netns exec vnb-test toyblast --dev vnbt0 --rate 2000 --burst 1 --seconds 0.5\n") ||
		strings.Contains(got, "--burst 40") {
		t.Errorf("transcript:\n%s", got)
	}
	m := set.Samples[0]
	if m.Metrics["toy_pps"] != 2000 || m.Metrics["toy_errors"] != 3 || len(m.Artifacts) != 1 {
		t.Errorf("sample %+v", m)
	}
	if d, ok := results.Lookup("toy_pps"); !ok || d.Unit != "pps" || d.Better != metric.HigherIsBetter {
		t.Errorf("toy_pps is %+v (%v)", d, ok)
	}
	checkReport(t, set)
}

// checkReport: the toy's table, one row group per backend, its rows and
// footnote, n/a for the refused burst with its reason as a numbered note.
func checkReport(t *testing.T, set *results.Set) {
	t.Helper()
	r, err := report.Build(set, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := report.WriteText(&buf, r, report.ASCII); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"| TAP | Sent ", " Kpps |", "| Errors ", "| n/a (1) |", "(1) n/a: burst 40: the toy tap refuses bursts above 32",
		"Sent = packets toyblast counted / its own run time"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// The runner's own loop: a netns, a tap and a QEMU guest (without a
// kernel: it idles in the firmware; the agent is a fake), the toy run by
// the real executor in the netns (toyblast is a stand-in script on PATH),
// samples in the run directory, the report from them.
func TestToyRunnerLoop(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces and a tap")
	testenv.NeedFile(t, "/dev/net/tun", "tun/tap")
	testenv.NeedCommand(t, qemu.DefaultBinary, "qemu-system-x86")
	bin := t.TempDir()
	script := "#!/bin/sh\necho 'sent 5000 packets, 3 errors in 2.5 s'\n"
	if err := os.WriteFile(filepath.Join(bin, "toyblast"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	s, err := scenarios.Load("toy.yaml", []byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	ag := &agent{}
	sum, err := runner.Run(t.Context(), scenarios.Order(s.Expand(), 1), runner.Options{
		Dir: dir, Scenario: "toy", Seed: 1, LockPath: filepath.Join(t.TempDir(), "lock"),
		Image: func(context.Context, scenarios.Guest, runner.GuestContents) (*runner.GuestImage, error) {
			return &runner.GuestImage{}, nil
		},
		DialAgent: func(context.Context, *qemu.VM) (runner.Agent, error) { return ag, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Samples != 4 {
		t.Errorf("summary %+v", sum)
	}
	// The two measured cells asked the guest side (burst 40 is refused
	// before it starts).
	if want := []string{"toy-expect start 1000", "toy-expect start 2000"}; !slices.Equal(sortedCopy(ag.ops), want) {
		t.Errorf("agent ops %q, want %q", ag.ops, want)
	}
	set, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, smp := range set.Samples {
		if smp.Unsupported == "" && (smp.Metrics["toy_pps"] != 2000 || smp.Metrics["rx_pps"] <= 0) {
			t.Errorf("%s: %v", smp.Cell, smp.Metrics)
		}
	}
	checkReport(t, set)
	repro, _ := os.ReadFile(filepath.Join(dir, results.ReproduceFile))
	if n := strings.Count(string(repro), "-device virtio-rng-pci"); n != 1 {
		t.Errorf("reproduce.sh has the toy's QEMU device %d times, want 1 (one guest for all cells)", n)
	}
}

// The toy's guest side is served by the guest agent like the agent's own
// ops: the registry's GuestOps are what /init hands the agent.
func TestToyGuestOp(t *testing.T) {
	ops := map[string]guestagent.Op{}
	for name, op := range workload.GuestOps() {
		ops[name] = guestagent.Op(op)
	}
	srv := &guestagent.Server{Ops: ops}
	if ev, _ := srv.Handle(`{"id":9,"op":"toy-expect","action":"start","args":["1000"]}`); ev.Ev != "ok" || ev.ID != 9 || ev.Msg != "expecting 1000 packets" {
		t.Errorf("reply %+v", ev)
	}
	if ev, _ := srv.Handle(`{"id":10,"op":"toy-expect","action":"stop"}`); ev.Ev != "error" || !strings.Contains(ev.Msg, "want start PACKETS") {
		t.Errorf("reply %+v", ev)
	}
}

// agent is a guest agent that is ready at once, counts rising rx and
// records the ops it is asked for.
type agent struct {
	rx  atomic.Uint64
	mu  sync.Mutex
	ops []string
}

func (a *agent) WaitReady(context.Context) error { return nil }
func (a *agent) Stats(context.Context) (runner.GuestStats, error) {
	return runner.GuestStats{RxPackets: a.rx.Add(1000)}, nil
}
func (a *agent) Do(_ context.Context, op, action string, args ...string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ops = append(a.ops, op+" "+action+" "+strings.Join(args, " "))
	return "", nil
}
func (a *agent) Sink(context.Context, string) error { return nil }
func (a *agent) Poweroff(context.Context) error     { return nil }
func (a *agent) Close() error                       { return nil }

// TestToyParseAndLab: the toy's parse kind joins perfparse's own (by name
// and by auto detection) and its module joins a lab VM's, from its
// folder alone.
func TestToyParseAndLab(t *testing.T) {
	p := perfparse.NewParser(workload.ParseKinds()...)
	if !slices.Contains(p.Kinds(), "toyblast") {
		t.Fatalf("kinds %v lack toyblast", p.Kinds())
	}
	const out = "sent 5000 packets, 3 errors in 0.5 s\n"
	for _, kind := range []string{"toyblast", "auto"} {
		v, err := p.Parse(kind, "toy.txt", strings.NewReader(out))
		if s, ok := v.(*summary); err != nil || !ok || s.Sent != 5000 || s.Errors != 3 || s.Seconds != 0.5 {
			t.Errorf("parse %s: %+v, %v", kind, v, err)
		}
	}
	if k := p.Detect([]byte("Performance counter stats for 'sleep 1':\n")); k != "perf-stat" {
		t.Errorf("perf stat output detected as %q beside the toy", k)
	}
	if !slices.Contains(workload.LabModules(), "toy_tap") {
		t.Errorf("lab modules %v lack toy_tap", workload.LabModules())
	}
}
