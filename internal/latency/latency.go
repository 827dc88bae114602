// Package latency turns the latency probe's raw records into the
// sample's metrics (rtt_p50_s, rtt_p99_s, ..., probe_loss_frac) with
// distribution-free confidence intervals for the percentiles, and reads
// and writes the per-probe artifact (probes.csv).
//
// It is pure: records in, numbers out. The probe itself (sockets, kernel
// timestamps) lives in runner/latprobe; the metric definitions live in
// internal/results with the harness's other keys.
package latency

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/vnetbench/vnetbench/internal/metric"
)

// Phases of a probe: sent before the load (the idle baseline), during
// the warmup (discarded), or during the measurement window.
const (
	PhaseIdle   = "idle"
	PhaseWarmup = "warmup"
	PhaseLoad   = "load"
)

// Record is one probe. Times are CLOCK_REALTIME nanoseconds (the clock
// the kernel's software timestamps use); 0 = not seen.
type Record struct {
	Seq   uint32
	Phase string
	Size  int // UDP payload bytes
	// Sent is read just before the send system call.
	Sent int64
	// Sched is the kernel's SCM_TSTAMP_SCHED stamp: the packet entered
	// the device layer (__dev_queue_xmit), before the qdisc.
	Sched int64
	// Soft is the SCM_TSTAMP_SND software stamp: the driver took the
	// packet (tun's skb_tx_timestamp), after the qdisc.
	Soft int64
	// Recv is the receive software stamp of the reply.
	Recv int64
	// Lost: no reply within the timeout (a late reply is still lost).
	Lost bool
}

// RTT is the round trip, send call to the reply's kernel receive stamp.
func (r Record) RTT() (float64, bool) {
	if r.Lost || r.Sent == 0 || r.Recv == 0 {
		return 0, false
	}
	return float64(r.Recv-r.Sent) / 1e9, true
}

// QdiscWait is the time between the SCHED and SOFTWARE stamps: the time
// the request spent in the qdisc (0 under noqueue, which has none).
func (r Record) QdiscWait() (float64, bool) {
	if r.Sched == 0 || r.Soft == 0 {
		return 0, false
	}
	return float64(r.Soft-r.Sched) / 1e9, true
}

// Confidence is the level of every interval this package computes.
const Confidence = 0.95

// Interval is a confidence interval of a percentile. A bound is NaN when
// the sample is too small to give it at Confidence (a p99.9 from fewer
// than about 3700 probes has no upper bound: 1 - 0.999^n must reach 0.975).
type Interval struct {
	Lo, Hi float64
}

// String writes the interval as "lo..hi" in seconds (a missing bound:
// "?").
func (iv Interval) String() string {
	f := func(x float64) string {
		if math.IsNaN(x) {
			return "?"
		}
		return strconv.FormatFloat(x, 'g', 4, 64)
	}
	return f(iv.Lo) + ".." + f(iv.Hi)
}

// Percentile returns the q-quantile (0 < q < 1) of sorted values (the
// order statistic at rank ceil(q*n), no interpolation: every number it
// returns was measured) and its distribution-free confidence interval:
// the order statistics whose ranks bracket the quantile with probability
// at least Confidence, from the binomial distribution of the count of
// values below it.
func Percentile(sorted []float64, q float64) (float64, Interval) {
	n := len(sorted)
	if n == 0 {
		return math.NaN(), Interval{math.NaN(), math.NaN()}
	}
	lo, hi := rankBounds(n, q, (1-Confidence)/2)
	iv := Interval{math.NaN(), math.NaN()}
	if lo >= 1 {
		iv.Lo = sorted[lo-1]
	}
	if hi <= n {
		iv.Hi = sorted[hi-1]
	}
	return Quantile(sorted, q), iv
}

// Quantile is Percentile's value alone (NaN for no values): for callers
// that do not use the interval, whose binomial table (rankBounds) costs
// O(n) a call, where the value is one index.
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	return sorted[min(max(int(math.Ceil(q*float64(n))), 1), n)-1]
}

// rankBounds returns 1-based ranks l and u with P(X(l) <= xq <= X(u)) >=
// 1-2*tail for X(i) the order statistics of n draws and xq the
// q-quantile: l is the largest rank with P(B < l) <= tail and u the
// smallest with P(B < u) >= 1-tail, for B ~ Binomial(n, q) the count of
// draws below xq (P(B < j) grows with j, so each is a binary search).
// l = 0 or u = n+1 mean no bound.
func rankBounds(n int, q, tail float64) (l, u int) {
	below := binomialBelow(n, q)
	l = sort.Search(n+1, func(i int) bool { return below[i+1] > tail })
	u = min(sort.Search(n+1, func(i int) bool { return below[i+1] >= 1-tail })+1, n+1)
	return l, u
}

// binomialBelow returns P(B < j) for j = 0..n+1, B ~ Binomial(n, q), by
// summing the probabilities (from log-gamma, so no term overflows).
// go-moremath's CDF, an incomplete beta function's continued fraction,
// panics ("betainc: a or b too big") for n in the hundreds of thousands,
// which a long latency run's probes reach; this costs O(n), a few ms
// there.
func binomialBelow(n int, q float64) []float64 {
	below := make([]float64, n+2)
	lq, lr := math.Log(q), math.Log1p(-q)
	lnf, _ := math.Lgamma(float64(n + 1))
	for j := 0; j <= n; j++ {
		lj, _ := math.Lgamma(float64(j + 1))
		lk, _ := math.Lgamma(float64(n - j + 1))
		below[j+1] = below[j] + math.Exp(lnf-lj-lk+xlogy(j, lq)+xlogy(n-j, lr))
	}
	return below
}

// xlogy is k log p with 0 log 0 = 0: at q 0 or 1 the binomial's mass is
// all at 0 or n, not NaN.
func xlogy(k int, logp float64) float64 {
	if k == 0 {
		return 0
	}
	return float64(k) * logp
}

// Summary is what one sample's probes say.
type Summary struct {
	// Metrics by key (rtt_p50_s, ..., probe_loss_frac); a key is absent
	// when its phase had no answered probe.
	Metrics map[metric.Key]float64
	// Intervals are the confidence intervals of the percentile metrics.
	Intervals map[metric.Key]Interval
	// Sent and Answered count the load phase's probes.
	Sent, Answered int
}

// Percentile metrics of the load phase, by key.
var loadPercentiles = []struct {
	Key metric.Key
	Q   float64
}{{metric.RTTP50S, 0.50}, {metric.RTTP99S, 0.99}, {metric.RTTP999S, 0.999}}

// Summarize computes the metrics of recs: the load phase's percentiles,
// maximum, loss and qdisc wait, and the idle phase's median and the
// inflation over it. Warmup probes are left out.
func Summarize(recs []Record) Summary {
	s := Summary{Metrics: map[metric.Key]float64{}, Intervals: map[metric.Key]Interval{}}
	var load, idle, wait []float64
	for _, r := range recs {
		rtt, ok := r.RTT()
		switch r.Phase {
		case PhaseLoad:
			s.Sent++
			if ok {
				s.Answered++
				load = append(load, rtt)
			}
			if w, ok := r.QdiscWait(); ok {
				wait = append(wait, w)
			}
		case PhaseIdle:
			if ok {
				idle = append(idle, rtt)
			}
		}
	}
	slices.Sort(load)
	slices.Sort(idle)
	slices.Sort(wait)
	if s.Sent > 0 {
		s.Metrics[metric.ProbeLossFrac] = float64(s.Sent-s.Answered) / float64(s.Sent)
	}
	if len(load) > 0 {
		for _, p := range loadPercentiles {
			v, iv := Percentile(load, p.Q)
			s.Metrics[p.Key], s.Intervals[p.Key] = v, iv
		}
		s.Metrics[metric.RTTMaxS] = load[len(load)-1]
	}
	if len(idle) > 0 {
		v, iv := Percentile(idle, 0.5)
		s.Metrics[metric.RTTIdleP50S], s.Intervals[metric.RTTIdleP50S] = v, iv
		if p50, ok := s.Metrics[metric.RTTP50S]; ok {
			s.Metrics[metric.RTTInflationS] = p50 - v
		}
	}
	if len(wait) > 0 {
		v, iv := Percentile(wait, 0.99)
		s.Metrics[metric.QdiscWaitP99S], s.Intervals[metric.QdiscWaitP99S] = v, iv
	}
	return s
}

// Labels returns the intervals as sample labels: "rtt_p99_s_ci95" =
// "lo..hi" (seconds), in key order.
func (s Summary) Labels() map[string]string {
	out := map[string]string{}
	for k, iv := range s.Intervals {
		out[string(k)+"_ci"+fmt.Sprint(int(Confidence*100))] = iv.String()
	}
	return out
}
