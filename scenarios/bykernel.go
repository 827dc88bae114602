package scenarios

import "slices"

// SplitRunning separates cells whose kernel is the running one from cells
// for other kernels (a run boots a lab VM for each of those), keeping the
// order.
func SplitRunning(cells []Cell) (running, other []Cell) {
	for _, c := range cells {
		if c.Kernel.Running() {
			running = append(running, c)
		} else {
			other = append(other, c)
		}
	}
	return running, other
}

// ByKernel groups cells by kernel label, each group in cell order. The
// labels come in the order of first (the scenario's), then of first
// appearance; labels of first without cells are left out.
func ByKernel(cells []Cell, first []string) ([]string, map[string][]Cell) {
	var rest []string
	byLabel := map[string][]Cell{}
	for _, c := range cells {
		if _, ok := byLabel[c.Kernel.Label]; !ok && !slices.Contains(first, c.Kernel.Label) {
			rest = append(rest, c.Kernel.Label)
		}
		byLabel[c.Kernel.Label] = append(byLabel[c.Kernel.Label], c)
	}
	var labels []string
	for _, l := range first {
		if _, ok := byLabel[l]; ok && !slices.Contains(labels, l) {
			labels = append(labels, l)
		}
	}
	return append(labels, rest...), byLabel
}

// KernelLabels lists the kernel labels of cells in order of first
// appearance.
func KernelLabels(cells []Cell) []string {
	labels, _ := ByKernel(cells, nil)
	return labels
}
