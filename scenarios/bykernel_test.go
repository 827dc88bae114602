package scenarios

import (
	"reflect"
	"testing"
)

func TestSplitRunning(t *testing.T) {
	cells := []Cell{
		{Name: "a", Kernel: Kernel{Label: "running"}},
		{Name: "a", Kernel: Kernel{Label: "stock", Debian: "6.1"}},
		{Name: "a", Kernel: Kernel{Label: "patched", Image: "/k", Modules: "/m"}},
		{Name: "b", Kernel: Kernel{Label: "built", Tree: "/src/linux"}},
	}
	running, other := SplitRunning(cells)
	if len(running) != 1 || running[0].Kernel.Label != "running" || len(other) != 3 {
		t.Fatalf("running %v other %v", running, other)
	}
	if got, want := KernelLabels(other), []string{"stock", "patched", "built"}; !reflect.DeepEqual(got, want) {
		t.Errorf("KernelLabels = %v, want %v", got, want)
	}
}

func TestByKernel(t *testing.T) {
	cell := func(label string) Cell { return Cell{Kernel: Kernel{Label: label}} }
	cells := []Cell{cell("patched"), cell("extra"), cell("stock"), cell("patched")}
	labels, by := ByKernel(cells, []string{"stock", "patched", "absent"})
	if want := []string{"stock", "patched", "extra"}; !reflect.DeepEqual(labels, want) {
		t.Errorf("labels %v, want %v", labels, want)
	}
	if len(by["patched"]) != 2 || len(by["stock"]) != 1 || len(by["extra"]) != 1 {
		t.Errorf("groups %v", by)
	}
}
