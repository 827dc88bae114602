package runner

import (
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

func expand(t *testing.T, yaml string) []scenarios.Cell {
	t.Helper()
	s, err := scenarios.Load("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return s.Expand()
}

// Distinct keeps cells whose kernel-facing commands differ (burst 0 is
// written, default is not; a vCPU pin is a taskset) and runs two cells
// with identical commands once, naming the axis they differ in.
func TestDistinct(t *testing.T) {
	cells := expand(t, `
backend: tap+vhost
pin: {vcpu: [none, 0]}
generator: {pktgen: {mode: multiqueue, threads: [1, 4], burst: [0, default], count: 100, xmit_mode: start_xmit}}
`)
	got, notes := Distinct(cells)
	if len(got) != len(cells) || len(cells) != 8 || len(notes) != 0 {
		t.Fatalf("distinct cells dropped: %d of %d kept, notes %v", len(got), len(cells), notes)
	}
	// Two cells with the same commands under two names (an axis value the
	// commands do not show): the second is dropped with a note.
	twin := cells[0]
	twin.Name += "/twin"
	twin.Axes = map[string]string{}
	for k, v := range cells[0].Axes {
		twin.Axes[k] = v
	}
	twin.Axes["generator.pktgen.note"] = "x"
	got, notes = Distinct(append([]scenarios.Cell{cells[0], twin}, cells[1:]...))
	if len(got) != len(cells) || got[0].Name != cells[0].Name || got[1].Name == twin.Name {
		t.Errorf("twin kept: %v", cellNames(got))
	}
	want := "cell " + twin.Name + " runs the same commands as " + cells[0].Name + ` (they differ only in generator.pktgen.note (unset and "x")): it runs once, as ` + cells[0].Name
	if len(notes) != 1 || notes[0] != want {
		t.Errorf("notes %q\nwant %q", notes, want)
	}
	// Another kernel is another experiment.
	other := twin
	other.Kernel = scenarios.Kernel{Label: "patched", Debian: "6.1"}
	if got, _ := Distinct([]scenarios.Cell{cells[0], other}); len(got) != 2 {
		t.Errorf("a cell on another kernel dropped")
	}
}

func cellNames(cells []scenarios.Cell) string {
	var n []string
	for _, c := range cells {
		n = append(n, c.Name)
	}
	return strings.Join(n, ", ")
}

// PinLines shows each pin as the taskset that Pin's sched_setaffinity
// equals, and pktgen's per-CPU threads as comments; pinNotes are the same
// lines with the real thread ids for reproduce.sh.
func TestPinLines(t *testing.T) {
	c := expand(t, `
backend: tap+vhost
guest: {vcpus: 2}
pin: {vhost: 0, vcpu: "2-3"}
generator: {pktgen: {mode: multiqueue, threads: 2, first_cpu: 1, count: 100, xmit_mode: start_xmit}}
`)[0]
	got := strings.Join(PinLines(&c), "\n")
	want := `# kpktgend_1 is bound to CPU 1 (a per-CPU kernel thread)
# kpktgend_2 is bound to CPU 2 (a per-CPU kernel thread)
taskset -p -c 0 VHOST_TID  # vhost-net worker: the thread named vhost-QEMU_PID
taskset -p -c 2 VCPU0_TID  # vCPU 0: QEMU's thread "CPU 0/KVM" (or "CPU 0/TCG")
taskset -p -c 3 VCPU1_TID  # vCPU 1: QEMU's thread "CPU 1/KVM" (or "CPU 1/TCG")`
	if got != want {
		t.Errorf("pin lines:\n%s\nwant:\n%s", got, want)
	}
	// The lines are part of the cell's commands (after QEMU starts).
	cmds := strings.Join(Commands(&c, qemu.TCG), "\n")
	if i, j := strings.Index(cmds, "qemu-system"), strings.Index(cmds, "taskset -p -c 0 VHOST_TID"); i < 0 || j < i {
		t.Errorf("pin lines not after QEMU in:\n%s", cmds)
	}
	g := expand(t, "pin: {generator: \"0-1\"}\ngenerator: {iperf3: {}}\n")[0]
	if got := PinLines(&g); len(got) != 1 || got[0] != "taskset -p -c 0-1 GENERATOR_TID  # generator, once the generator runs" {
		t.Errorf("generator pin: %q", got)
	}
	if got := strings.Join(pinNotes("vCPU", []int{101, 102}, []int{2, 3}, true), "\n"); got != "taskset -p -c 2 101  # vCPU 0\ntaskset -p -c 3 102  # vCPU 1" {
		t.Errorf("pin notes per thread: %q", got)
	}
	if got := pinNotes("vhost-net worker", []int{7}, []int{0, 2}, false); len(got) != 1 || got[0] != "taskset -p -c 0,2 7  # vhost-net worker" {
		t.Errorf("pin notes: %q", got)
	}
	if got := pinNotes("vhost-net worker", []int{7}, nil, false); got != nil {
		t.Errorf("unpinned: %q", got)
	}
}
