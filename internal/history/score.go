package history

import "slices"

// Scores that rate detected change points against annotated ones, as the
// Turing change point benchmark does (van den Burg and Williams, 2020).
// Change points are indices into a series of n points; index 0 is added
// to every annotation and to the prediction (the start of the first
// segment counts as a change on both sides).

// F1 is the F1 score of predicted change points against one or more
// annotators' sets: a true change is found when a prediction lies within
// margin points of it, each prediction matching at most one true change;
// precision is against the union of the annotations, recall the mean of
// each annotator's recall.
func F1(annotations [][]int, pred []int, margin int) float64 {
	x := withZero(pred)
	var union []int
	recall := 0.0
	for _, a := range annotations {
		t := withZero(a)
		union = append(union, t...)
		recall += float64(truePositives(t, x, margin)) / float64(len(t))
	}
	if len(annotations) == 0 {
		return 0
	}
	recall /= float64(len(annotations))
	precision := float64(truePositives(withZero(union), x, margin)) / float64(len(x))
	if precision+recall == 0 {
		return 0
	}
	return 2 * precision * recall / (precision + recall)
}

// truePositives counts the changes of t that have a prediction of x
// within margin, each prediction used once (the closest free one).
func truePositives(t, x []int, margin int) int {
	used := make([]bool, len(x))
	n := 0
	for _, tau := range t {
		best := -1
		for j, p := range x {
			d := abs(p - tau)
			if used[j] || d > margin {
				continue
			}
			if best < 0 || d < abs(x[best]-tau) {
				best = j
			}
		}
		if best >= 0 {
			used[best] = true
			n++
		}
	}
	return n
}

// Covering is the segmentation covering of the prediction's segments
// over a series of n points, averaged over the annotators: for each true
// segment, its length times its best Jaccard index with a predicted
// segment, summed and divided by n.
func Covering(annotations [][]int, pred []int, n int) float64 {
	if len(annotations) == 0 || n == 0 {
		return 0
	}
	ps := segmentsOf(pred, n)
	total := 0.0
	for _, a := range annotations {
		c := 0.0
		for _, s := range segmentsOf(a, n) {
			best := 0.0
			for _, q := range ps {
				best = max(best, jaccard(s, q))
			}
			c += float64(s[1]-s[0]) * best
		}
		total += c / float64(n)
	}
	return total / float64(len(annotations))
}

func segmentsOf(cps []int, n int) [][2]int {
	b := withZero(cps)
	b = slices.DeleteFunc(b, func(i int) bool { return i >= n })
	b = append(b, n)
	var out [][2]int
	for i := 0; i+1 < len(b); i++ {
		out = append(out, [2]int{b[i], b[i+1]})
	}
	return out
}

func jaccard(a, b [2]int) float64 {
	inter := min(a[1], b[1]) - max(a[0], b[0])
	if inter <= 0 {
		return 0
	}
	union := max(a[1], b[1]) - min(a[0], b[0])
	return float64(inter) / float64(union)
}

func withZero(cps []int) []int {
	out := append([]int{0}, cps...)
	slices.Sort(out)
	return slices.Compact(out)
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}
