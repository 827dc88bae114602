package dropmon

// Delta is after minus before by row: the drops between two snapshots
// (rows that did not grow are left out; a counter that went backwards,
// which a map the kernel never clears cannot do, counts as 0).
func Delta(before, after map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, a := range after {
		if b := before[k]; a > b {
			out[k] = a - b
		}
	}
	return out
}
