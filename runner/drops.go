package runner

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/vnetbench/vnetbench/internal/dropmon"
	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/scenarios"
)

// Labels of a sample with drop reasons.
const (
	// LabelDropProbe is where the kernel's drops were counted
	// (dropmon.Monitor.Probe).
	LabelDropProbe = "drop_probe"
	// LabelDropCheck says whether the drops counted in metric.TapXmitFunc add up to
	// Lost over the same interval: "adds up", or why they do not.
	LabelDropCheck = "drop_check"
)

// dropCounter counts the kernel's drops for the cells with drop_reasons:
// attached by this run on the host, or by the lab VM's init and inherited
// (dropmon.EnvVar) inside a lab.
type dropCounter struct {
	mon   *dropmon.Monitor
	names *dropmon.Names
	why   string // not counting: why
}

// openDrops sets up the counter when a cell asks for drop reasons (nil
// otherwise). A counter that cannot count says why on each such sample;
// the run goes on.
func openDrops(cells []scenarios.Cell) *dropCounter {
	if !slices.ContainsFunc(cells, func(c scenarios.Cell) bool { return c.DropReasons }) {
		return nil
	}
	d := &dropCounter{}
	var err error
	switch {
	case os.Getenv(dropmon.EnvVar) != "":
		d.mon, err = dropmon.Inherit(os.Getenv(dropmon.EnvVar))
	case os.Getenv(dropmon.ErrEnvVar) != "":
		err = errors.New(os.Getenv(dropmon.ErrEnvVar))
	default:
		d.mon, err = dropmon.Attach()
	}
	if err == nil {
		d.names, err = dropmon.LoadNames()
	}
	if err != nil {
		d.why = err.Error()
		d.close()
	}
	return d
}

func (d *dropCounter) close() {
	if d != nil && d.mon != nil {
		d.mon.Close()
		d.mon = nil
	}
}

// countsFunc is Window.DropCounts for a cell on tap: the kernel's drops
// by reason and function, and the tap's root qdisc's drops (key
// metric.DropQdisc). nil when the cell does not count drops.
func (d *dropCounter) countsFunc(c *scenarios.Cell, ns *hostnet.Netns, tap string) func() (map[string]uint64, error) {
	if d == nil || d.mon == nil || !c.DropReasons {
		return nil
	}
	return func() (map[string]uint64, error) {
		snap, err := d.mon.Snapshot()
		if err != nil {
			return nil, err
		}
		out := d.names.Counts(snap)
		if q, err := ns.RootQdisc(tap); err == nil && q.Kind != "" {
			out[metric.DropQdisc] = q.Drops
		}
		return out, nil
	}
}

// addDrops completes a sample of a cell with drop reasons: the drops over
// the window (before, after: Counters.Drops) when the generator did not
// read them over its own interval, where they were counted, and whether
// those in metric.TapXmitFunc add up to Lost.
func (d *dropCounter) addDrops(s *results.Sample, c *scenarios.Cell, res *workload.Result, before, after Counters) {
	if d == nil || !c.DropReasons {
		return
	}
	if d.mon == nil {
		s.Warnings = append(s.Warnings, "drop reasons not counted: "+d.why)
		return
	}
	s.Labels[LabelDropProbe] = d.mon.Probe
	interval := s.WindowS
	_, ownClock := s.Metrics[metric.TxRunS] // Lost is over the generator's own run time
	switch {
	case res != nil && res.DropsOK:
		interval = s.Metrics[metric.TxRunS]
	case ownClock:
		return // it read them around its run and could not: its warning says why
	case before.Drops != nil && after.Drops != nil && s.WindowS > 0:
		for k, n := range dropmon.Delta(before.Drops, after.Drops) {
			s.Metrics[metric.Drop(k)] = float64(n) / s.WindowS
		}
	default:
		s.Warnings = append(s.Warnings, "drop reasons: the counters could not be read around the window")
		return
	}
	lost, ok := s.Metrics[metric.LostPPS]
	if !ok || interval <= 0 {
		return
	}
	check, counted := dropCheck(s.Metrics, interval, d.mon.Probe, c.Generator.Kind)
	s.Labels[LabelDropCheck] = check
	if check != dropsAddUp {
		s.Warnings = append(s.Warnings, fmt.Sprintf("drop reasons: %.0f drops counted in %s, Lost (the tap's tx_dropped) %.0f over the same interval: %s",
			counted, metric.TapXmitFunc, lost*interval, check))
	}
}

// dropsAddUp is LabelDropCheck's value when the drops in the tap's
// transmit function are Lost.
const dropsAddUp = "adds up"

// dropCheck compares the drops counted in metric.TapXmitFunc with Lost
// over interval: dropsAddUp when they are the same count, else why not
// (the same words for every run it applies to); counted is the former.
func dropCheck(m map[metric.Key]float64, interval float64, probe, generator string) (check string, counted float64) {
	var anywhere float64 // drops counted in any function
	for k, v := range m {
		if _, fn, ok := metric.DropKey(k); ok && fn != "" {
			anywhere += v
			if fn == metric.TapXmitFunc {
				counted += v * interval
			}
		}
	}
	if math.Abs(counted-m[metric.LostPPS]*interval) < 0.5 {
		return dropsAddUp, counted
	}
	switch {
	case anywhere == 0:
		return "the counter counted no drop in any function over the interval: it was not counting (detached, or its probe never fired)", counted
	case probe == dropmon.ProbeTracepoint && generator == "pktgen":
		return "counted at the skb:kfree_skb tracepoint, which fires only when a packet's last reference goes; pktgen holds its own reference to every packet it sends, so tun's drops reach the tracepoint later, as NOT_SPECIFIED in pktgen_xmit (a kernel with kprobes counts them where tun drops them)", counted
	case probe == dropmon.ProbeTracepoint:
		return "counted at the skb:kfree_skb tracepoint, which sees a drop only when it frees the packet's last reference", counted
	}
	return "tun counts some tx_dropped without freeing a packet through the drop function (XDP frames it could not queue)", counted
}

// readDrops reads w's drop counters for the window's counters (nil when
// the cell does not count drops or they cannot be read).
func readDrops(w *Window) map[string]uint64 {
	if w == nil || w.DropCounts == nil {
		return nil
	}
	m, err := w.DropCounts()
	if err != nil {
		return nil
	}
	return m
}
