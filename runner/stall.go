package runner

import (
	"fmt"
	"math"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/scenarios"
)

// StalledReceiver starts the warning of a sample whose generator sent
// nothing because the guest did not drain the tap (stallWarning).
const StalledReceiver = "stalled receiver"

// defaultRing is tun's ring depth when the tap's txqueuelen is unknown
// (tun sizes each queue's ring to txqueuelen; a tap's default is 500).
const defaultRing = 500

// windowMetrics puts the window's counters and the workload's result
// into s, with the reason when the generator sent nothing.
func windowMetrics(s *results.Sample, c *scenarios.Cell, res *workload.Result, before, after Counters, window time.Duration) {
	NetMetrics(s, before, after, window)
	AddResult(s, c, res)
	addStallWarning(s, c, res, after.Tap.TxQLen)
}

// addStallWarning says why a sample's generator sent nothing (stallWarning)
// when it did; the sample is kept as measured.
func addStallWarning(s *results.Sample, c *scenarios.Cell, res *workload.Result, ring int) {
	if w := stallWarning(s, c, res, ring); w != "" {
		s.Warnings = append(s.Warnings, w)
	}
}

// stallWarning: a generator that ran for a time of its own (tx_run_s:
// pktgen's Result) and sent no packets (tx_pps 0), so the device refused
// every packet it offered. A generator that never ran has no run time and
// gets no such warning. On a tap whose ring is full the generator waits
// (a stopped queue, tun with backpressure) or is refused (tail drops)
// until the reader, QEMU or vhost-net for the guest, takes packets off
// the ring: a tail-dropping tap takes a packet for each slot freed, and
// tun's backpressure (a stopped queue) wakes the queue once half the ring
// is free. If the reader took less than half a ring in the whole window
// (per queue the generator sends on: each queue wakes on its own ring),
// the receiver stalled (a guest starved of CPU does not refill its virtio
// rx queue): Transmitted 0 measures the receiver. If it took more, the
// ring had room and the generator still sent nothing: not a stall, and
// the warning says so (a tx queue left stopped: a lost wake). ring is
// the tap's txqueuelen, each queue's ring (0 = unknown: tun's default).
// What the reader took and the guest received are NetMetrics' tx_packets
// and rx_pps over the window: without a tap count or a window there is
// no telling, and no warning.
func stallWarning(s *results.Sample, c *scenarios.Cell, res *workload.Result, ring int) string {
	tx, ok := s.Metrics[metric.TxPPS]
	read, counted := s.Metrics[metric.TxPackets]
	if !ok || tx > 0 || s.Metrics[metric.TxRunS] <= 0 || res == nil || res.Packets > 0 || !counted || s.WindowS <= 0 {
		return ""
	}
	received := "an unknown number (its counter went back)"
	if rx, ok := s.Metrics[metric.RxPPS]; ok {
		received = fmt.Sprintf("%.0f", math.Round(rx*s.WindowS))
	}
	if ring <= 0 {
		ring = defaultRing
	}
	window := fmt.Sprintf("%.1f s window (its own run %.1f s)", s.WindowS, s.Metrics[metric.TxRunS])
	queues, half := sendQueues(c), fmt.Sprintf("half its %d-packet ring", ring)
	if queues > 1 {
		half = fmt.Sprintf("half a %d-packet ring on each of the %d queues it sends on, %d", ring, queues, queues*(ring/2))
	}
	if read < float64(queues*(ring/2)) {
		return fmt.Sprintf("%s: %s sent no packets in the %s while the tap's reader took %.0f (less than %s) and the guest received %s: the guest did not drain the tap (starved of CPU?), and a full ring holds the generator at 0; Transmitted 0 here measures the receiver, not the datapath",
			StalledReceiver, c.Generator.Kind, window, read, half, received)
	}
	return fmt.Sprintf("%s sent no packets in the %s although the tap's reader took %.0f (%s or more): not a stalled receiver; was the tap's tx queue left stopped?",
		c.Generator.Kind, window, read, half)
}

// queueSender is a generator's Config that knows how many of a tap's
// queues its threads send on (pktgen's).
type queueSender interface{ SendQueues(tapQueues int) int }

// sendQueues is how many of the tap's queues the generator sends on: a
// stopped queue wakes on room in its own ring, so a stall is less than
// half a ring taken from each of them (one for a generator that does not
// say).
func sendQueues(c *scenarios.Cell) int {
	if q, ok := c.Generator.Config.(queueSender); ok {
		return max(q.SendQueues(c.TapQueues()), 1)
	}
	return 1
}
