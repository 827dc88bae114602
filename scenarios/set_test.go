package scenarios

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/workload"
)

func mustSets(t *testing.T, args ...string) []Set {
	t.Helper()
	var out []Set
	for _, a := range args {
		s, err := ParseSet(a)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestSetOverridesBuiltin(t *testing.T) {
	s, err := LoadBuiltin("thread-pktgen", mustSets(t, "generator.pktgen.duration=10s", "repetitions=3", "timeouts.cell=2h")...)
	if err != nil {
		t.Fatal(err)
	}
	cells := s.Expand()
	if n := len(Order(cells, 1)); n != 6 { // 2 backends x 3 repetitions
		t.Fatalf("got %d samples, want 6", n)
	}
	c := cells[0]
	if d, known := c.Generator.Config.Length(); !known || d != 10*time.Second {
		t.Errorf("Length = %v, %v; want 10s, known", d, known)
	}
	if c.Timeouts.Cell != 2*time.Hour {
		t.Errorf("timeouts.cell = %v", c.Timeouts.Cell)
	}
	if len(s.Sets) != 3 || s.Sets[0].String() != "generator.pktgen.duration=10s" {
		t.Errorf("Sets = %v", s.Sets)
	}
}

func TestSetCreatesSectionsAndAxes(t *testing.T) {
	src := "generator: {iperf3: {}}\n"
	s, err := Load("x.yaml", []byte(src), mustSets(t, "backend=[tap, tap+vhost]", "guest.vcpus=2", "generator.iperf3.duration=3s")...)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Axes) != 1 || s.Axes[0].Key != "backend" {
		t.Fatalf("axes = %v", s.Axes)
	}
	c := s.Expand()[0]
	if c.Guest.VCPUs != 2 {
		t.Errorf("vcpus = %d", c.Guest.VCPUs)
	}
	if d, _ := c.Generator.Config.Length(); d != 3*time.Second {
		t.Errorf("duration = %v", d)
	}
}

// A later --set of the same key wins, as a later line would if YAML
// allowed it.
func TestSetLastWins(t *testing.T) {
	s, err := Load("x.yaml", []byte("repetitions: 5\ngenerator: {iperf3: {}}\n"), mustSets(t, "repetitions=2", "repetitions=1")...)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(Order(s.Expand(), 1)); n != 1 {
		t.Errorf("samples = %d, want 1", n)
	}
}

// Every bad override is one *Error line that names the override.
func TestSetErrors(t *testing.T) {
	src := "backend: tap\nguest: {vcpus: 1}\ngenerator: {pktgen: {count: 1000}}\n"
	for _, tc := range []struct {
		set, want string
	}{
		{"generator.pktgen.duration=abc", "--set generator.pktgen.duration=abc: "},
		{"generator.pktgen.durration=10s", `--set generator.pktgen.durration=10s: unknown key "durration" in generator.pktgen; did you mean duration?`},
		{"repetitions=0", "--set repetitions=0: "},
		{"repetitions=five", "--set repetitions=five: "},
		{"backend=tapp", "--set backend=tapp: "},
		{"generator.iperf3.duration=5s", "--set generator.iperf3.duration=5s: generator.iperf3 is not in the scenario (it has pktgen)"},
		{"backend.x=1", `--set backend.x=1: backend is "tap" (a string) in the scenario, not a section of keys`},
		{"generator.pktgen.burst=32", "--set generator.pktgen.burst=32: generator.pktgen.burst 32 is not supported"},
		{"guest.vcpus=[1, 2", "--set guest.vcpus=[1, 2: value is not YAML"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			_, err := Load("x.yaml", []byte(src), mustSets(t, tc.set)...)
			if err == nil {
				t.Fatal("no error")
			}
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, fault.ErrInput) {
				t.Fatalf("%T %v: not a scenario input error", err, err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got  %s\nwant prefix %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("more than one line: %q", err)
			}
		})
	}
}

func TestParseSet(t *testing.T) {
	for _, bad := range []string{"repetitions", "=3", "Repetitions=3", "a..b=1", "x=a\nb"} {
		if _, err := ParseSet(bad); err == nil || !errors.Is(err, fault.ErrInput) {
			t.Errorf("ParseSet(%q) = %v, want an input error", bad, err)
		}
	}
	s, err := ParseSet("generator.pktgen.dst_mac=52:54:00:12:34:56")
	if err != nil || s.Key != "generator.pktgen.dst_mac" || s.Value != "52:54:00:12:34:56" {
		t.Errorf("got %+v, %v", s, err)
	}
}

// A warning at an overridden value names the override, not a line of
// the file.
func TestSetWarningNamesOverride(t *testing.T) {
	s, err := Load("x.yaml", []byte("generator: {pktgen: {count: 1000}}\n"), mustSets(t, "qdisc=fq_codel")...)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) == 0 {
		t.Fatal("no warning for a qdisc that pktgen's start_xmit bypasses")
	}
	if !strings.HasPrefix(s.Warnings[0], "--set qdisc=fq_codel: ") {
		t.Errorf("warning %q does not name the override", s.Warnings[0])
	}
}

// A count-bound cell's workload names the overrides that bound it by
// time (workload.Counter), and they do: pktgen and AF_XDP.
func TestCounterWithin(t *testing.T) {
	for _, src := range []string{
		"generator: {pktgen: {mode: multiqueue, threads: 2, count: 1000}}\nqueues: 2\n",
		"generator: {afxdp: {threads: 2, count: 1000}}\nqueues: 2\n",
	} {
		s, err := Load("x.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		c := s.Expand()[0]
		ct, ok := c.Generator.Config.(workload.Counter)
		if !ok {
			t.Fatalf("%s: not a Counter", c.Generator.Kind)
		}
		if _, known := c.Generator.Config.Length(); known || ct.Packets() != 2000 {
			t.Errorf("%s: Packets %d, want 2000 and an unknown length", c.Generator.Kind, ct.Packets())
		}
		var sets []Set
		for _, kv := range ct.Within(10 * time.Second) {
			sets = append(sets, Set{Key: "generator." + c.Generator.Kind + "." + kv.Key, Value: kv.Value})
		}
		s, err = Load("x.yaml", []byte(src), sets...)
		if err != nil {
			t.Fatalf("%s with %v: %v", c.Generator.Kind, sets, err)
		}
		if d, known := s.Expand()[0].Generator.Config.Length(); !known || d != 10*time.Second {
			t.Errorf("%s with %v: Length %v %v, want 10s known", c.Generator.Kind, sets, d, known)
		}
	}
}
