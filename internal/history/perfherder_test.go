package history

import (
	"math"
	"slices"
	"testing"
)

// perfherderRule is Mozilla Perfherder's alerting rule, the production
// alerting of the CI histories TestRealSeriesPerf scores, written here
// from treeherder's perfalert.detect_changes and perf/alerts.py (as they
// ran in 2023-2024, the data's year) for comparison:
//
//   - For each point i (one value per push, as the aggregated data hold),
//     a Welch-style t statistic compares the points before i with the
//     points from i on: fore points from i, and back points before it,
//     from minBack up to maxBack (the back window grows by one point for
//     each point since the last t above the threshold). Each window's mean
//     is weighted linearly, the point nearest i weighing most and the
//     farthest 1/n; the variance is the plain sample variance around that
//     weighted mean; t = Δmean / √(v1/n1 + v2/n2), infinite when both
//     variances are 0.
//   - A point alerts when both windows are full (minBack before, fore
//     from it), |t| > tThreshold and |t| is not below either neighbour's.
//   - An alert is dropped when its change, between the unweighted means of
//     the two windows, is less than minPct percent of the mean before
//     (PERFHERDER_REGRESSION_THRESHOLD; 0 when that mean is 0).
//   - Production runs as data arrive and looks only at points after the
//     series' last alert: after an alert at i the next needs minBack
//     points after i. detect replays that: the first alert from start
//     on, then again from the point after it.
//
// Not replayed: a point's neighbour seen before its own fore window is
// complete (production may alert one push earlier when data arrive one
// push at a time), the per-signature overrides of the windows and the
// threshold, and several values per push (the aggregated data hold one).
type perfherderRule struct {
	minBack, maxBack, fore int
	tThreshold, minPct     float64
}

// perfherder holds treeherder's defaults: back 12-24 points, fore 12,
// t > 7, changes of at least 2%.
var perfherder = perfherderRule{minBack: 12, maxBack: 24, fore: 12, tThreshold: 7, minPct: 2}

// detect returns the indices of the points that alert, in order.
func (r perfherderRule) detect(xs []float64) []int {
	var out []int
	for start := 0; start < len(xs); {
		i := r.first(xs[start:])
		if i < 0 {
			break
		}
		out = append(out, start+i)
		start += i + 1
	}
	return out
}

// first returns the first point of d that alerts, or -1.
func (r perfherderRule) first(d []float64) int {
	n := len(d)
	ts := make([]float64, n)
	back := make([]int, n)
	since := 0
	for i := 1; i < n; i++ {
		back[i] = min(i, min(max(since, r.minBack), r.maxBack))
		ts[i] = math.Abs(welchT(d[i-back[i]:i], d[i:min(n, i+r.fore)]))
		if ts[i] > r.tThreshold {
			since = 0
		} else {
			since++
		}
	}
	for i := 1; i < n; i++ {
		if back[i] < r.minBack || n-i < r.fore || ts[i] <= r.tThreshold {
			continue
		}
		if ts[i-1] > ts[i] || (i+1 < n && ts[i+1] > ts[i]) {
			continue
		}
		if r.bigEnough(d[i-back[i]:i], d[i:i+r.fore]) {
			return i
		}
	}
	return -1
}

// bigEnough is Perfherder's magnitude check on the windows' plain means.
func (r perfherderRule) bigEnough(before, after []float64) bool {
	prev, next := meanOf(before), meanOf(after)
	pct := 0.0
	if prev != 0 {
		pct = 100 * math.Abs(next-prev) / prev
	}
	return pct >= r.minPct
}

// welchT is Perfherder's t statistic of after against before, where
// before is in time order (its last point nearest the split) and after
// starts at the split.
func welchT(before, after []float64) float64 {
	if len(before) == 0 || len(after) == 0 {
		return 0
	}
	near := slices.Clone(before)
	slices.Reverse(near)
	m1, v1 := linearStats(near)
	m2, v2 := linearStats(after)
	d := m2 - m1
	if d == 0 {
		return 0
	}
	if v1 == 0 && v2 == 0 {
		return math.Inf(1)
	}
	return d / math.Sqrt(v1/float64(len(near))+v2/float64(len(after)))
}

// linearStats returns the mean of xs weighted (n-i)/n for the i-th value
// and the sample variance around that mean (0 for one value).
func linearStats(xs []float64) (mean, variance float64) {
	n := float64(len(xs))
	var sum, wsum float64
	for i, x := range xs {
		w := (n - float64(i)) / n
		sum += w * x
		wsum += w
	}
	mean = sum / wsum
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / (n - 1)
}

func meanOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// TestPerfherderRule checks the reference rule on series whose alerts
// follow from its definition: a clear step alerts at its first point; a
// step back 10 points later does not (the next alert needs 12 points
// after the last); one 20 points later does; a step below 2% does not, however
// clean; and none alerts in the first 12 or the last 11 points.
func TestPerfherderRule(t *testing.T) {
	wiggle := func(n int, level float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = level + 0.1*float64(i%3-1)
		}
		return out
	}
	cat := func(parts ...[]float64) []float64 { return slices.Concat(parts...) }
	cases := []struct {
		name string
		xs   []float64
		want []int
	}{
		{"step", cat(wiggle(30, 100), wiggle(30, 110)), []int{30}},
		{"fixed 10 later", cat(wiggle(30, 100), wiggle(10, 110), wiggle(30, 100)), []int{30}},
		{"fixed 20 later", cat(wiggle(30, 100), wiggle(20, 110), wiggle(30, 100)), []int{30, 50}},
		{"below 2%", cat(wiggle(30, 100), wiggle(30, 101.5)), nil},
		{"too early", cat(wiggle(8, 100), wiggle(40, 110)), nil},
		{"too late", cat(wiggle(40, 100), wiggle(8, 110)), nil},
	}
	for _, c := range cases {
		if got := perfherder.detect(c.xs); !slices.Equal(got, c.want) {
			t.Errorf("%s: alerts at %v, want %v", c.name, got, c.want)
		}
	}
}

// TestWelchT checks the statistic on windows worked by hand: before
// {1, 3} (nearest 3) weighs 3 by 1 and 1 by 1/2, mean 7/3, variance
// ((1-7/3)² + (3-7/3)²)/1 = 20/9; after {5, 5} has mean 5, variance 0:
// t = (5 - 7/3) / √(20/9/2) = 8/√10.
func TestWelchT(t *testing.T) {
	got := welchT([]float64{1, 3}, []float64{5, 5})
	if want := 8 / math.Sqrt(10); math.Abs(got-want) > 1e-12 {
		t.Errorf("t = %v, want %v", got, want)
	}
	if got := welchT([]float64{2, 2}, []float64{3, 3}); !math.IsInf(got, 1) {
		t.Errorf("t of constant windows = %v, want +Inf", got)
	}
}
