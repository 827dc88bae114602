// Package series is what the AF_XDP series' workloads (afxdp, the
// harness's generator, and testpmd, the series' own) share: their
// pkt_size and mode keys, queue and CPU checks, their table, their
// feature's name, the frames they send, the tap's counters and the
// generator's threads.
// xdp_redirect, which drives the same generator on a veth, takes the
// pkt_size key, the feature and the frames too. The plug-ins import this
// package; none imports another. The AF_XDP socket driver is
// internal/xsk, which names no workload.
package series

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/internal/xsk"
)

// The bind modes (the mode key's values).
const (
	ModeCopy     = string(xsk.Copy)
	ModeZeroCopy = string(xsk.ZeroCopy)
)

// FrameSize is the pkt_size key of the AF_XDP series' workloads: a frame
// length from Ethernet+IPv4+UDP headers (42 bytes) up to one UMEM chunk,
// an axis, default 64.
func FrameSize(p *int, key string) *schema.Leaf[int] {
	return schema.Value(p, key, frameSizeKind).Default(64).Unit("bytes").Axis().Short("pkt").
		Doc("frame length without FCS: Ethernet + IPv4 + UDP headers (42 bytes) + payload, as testpmd's --txpkts; the series' \"UDP\" sizes are 64, 512, 1024")
}

var frameSizeKind = schema.Kind[int]{
	Type: "integer",
	Parse: func(n *yaml.Node, c *schema.Ctx) (int, string) {
		x, msg := schema.ParseInt(n, c, "")
		switch {
		case msg != "":
			return 0, msg
		case x < xsk.HeaderLen:
			return 0, fmt.Sprintf("%s: %d bytes is below the Ethernet (14) + IPv4 (20) + UDP (8) headers; use %d or more", c.Path, x, xsk.HeaderLen)
		case x > xsk.MaxFrameSize:
			return 0, fmt.Sprintf("%s: %d bytes is above one AF_XDP UMEM chunk; use %d or less", c.Path, x, xsk.MaxFrameSize)
		}
		return int(x), ""
	},
	Format: strconv.Itoa,
}

// ModeKey is the mode key of the AF_XDP series' workloads: copy or
// zerocopy, an axis, default copy.
func ModeKey(p *string, key string) *schema.Leaf[string] {
	return schema.Enum(p, key, ModeCopy, ModeZeroCopy).Default(ModeCopy).Axis().Bare().
		Doc("AF_XDP bind mode: copy (XDP_COPY: the kernel copies each frame into an skb) or zerocopy (XDP_ZEROCOPY: the driver sends from the UMEM; stock tun refuses it, the cell is then n/a)")
}

// CheckQueues refuses threads on tap queues the cell's tap does not have
// (queues defaults to 1; queues: auto gives it first_queue + threads).
func CheckQueues(r *workload.Resolver, first, threads int) error {
	q := r.Cell.Queues
	if q == 0 || first+threads <= q {
		return nil
	}
	key := "threads"
	if first > 0 {
		key = "first_queue"
	}
	have := "queue 0 only"
	if q > 1 {
		have = fmt.Sprintf("queues 0-%d", q-1)
	}
	return r.Errorf(key, "%s: threads %d from first_queue %d send on tap queue %d, but queues is %d (the tap has %s; one AF_XDP socket per queue); set queues: %d or queues: auto",
		r.Key(key), threads, first, first+threads-1, q, have, first+threads)
}

// CheckThreadCPUs refuses more threads than CPUs for the series'
// workloads, whose threads each keep a CPU busy: name is the workload
// (its section generator.NAME).
func CheckThreadCPUs(h *workload.HostCheck, name string, threads int) error {
	if threads > h.NumCPU {
		return h.Errorf("threads", "generator.%s.threads %d is more than the machine has: %s; use threads: %d or fewer", name, threads, h.Have, h.NumCPU)
	}
	return nil
}

// Table is the table of the AF_XDP series' workloads (this one and
// testpmd): per kernel, the UDP sizes as row groups, copy and zero-copy
// as columns with the speedup, and the rows Transmitted, Lost, Received
// (the guest's sink) and the CPU per packet of the sender (the perf
// target sender) and of the vhost-net worker, where a run had them.
// transmitted defines the workload's Transmitted for the footnote.
func Table(sender, transmitted string) workload.Table {
	return workload.Table{
		Headline: metric.TxPPS, ThreadsKey: "threads", ThreadsNoun: "threads",
		Versus: &workload.Versus{RowKey: "pkt_size", ColKey: "mode", RowHeader: "UDP size", RowLabel: "UDP %s",
			Cols:   []workload.VersusCol{{Value: ModeCopy, Header: "copy"}, {Value: ModeZeroCopy, Header: "zero-copy"}},
			Change: "speedup"},
		Rows: func(threads int, seen workload.Seen) []workload.TableRow {
			rows := []workload.TableRow{{Key: metric.TxPPS, Label: "Transmitted"}}
			if threads > 1 {
				rows = append(rows, workload.TableRow{Key: metric.TxPPSThread, Label: "Tx per thread"})
			}
			rows = append(rows, workload.TableRow{Key: metric.LostPPS, Label: "Lost"})
			if seen.Positive(metric.RxPPS) {
				rows = append(rows, workload.TableRow{Key: metric.RxPPS, Label: "Received"})
			}
			if k := metric.CPUPerPkt(sender); seen.Positive(k) {
				rows = append(rows, workload.TableRow{Key: k, Label: "CPU/pkt " + sender})
			}
			if seen.Positive("cpu_per_pkt.vhost") {
				rows = append(rows, workload.TableRow{Key: "cpu_per_pkt.vhost", Label: "CPU/pkt vhost"})
			}
			return rows
		},
		Notes: func(threads int, seen workload.Seen) []string {
			total := "one thread"
			if threads > 1 {
				total = fmt.Sprintf("total over its %d threads (Tx per thread: the mean of one thread's own rate)", threads)
			}
			notes := []string{
				"UDP N = frames of N bytes without FCS (Ethernet + IPv4 + UDP headers + payload), as testpmd's --txpkts=N",
				transmitted + ", " + total + "; Lost = the tap's tx_dropped counted during that same run / the same run time (one clock)",
			}
			if seen.Positive(metric.RxPPS) {
				notes = append(notes, "Received = packets the guest's sink counted (xdp-drop: its XDP program, testpmd rxonly's role) / the window: from the generator's start to its end, on the harness's clock")
			}
			var whose []string
			if seen.Positive(metric.CPUPerPkt(sender)) {
				whose = append(whose, "of the "+sender+" threads (total over them)")
			}
			if seen.Positive("cpu_per_pkt.vhost") {
				whose = append(whose, "of the vhost-net worker thread")
			}
			if len(whose) > 0 {
				notes = append(notes, "CPU/pkt = perf stat task-clock over the window "+strings.Join(whose, ", and ")+" / packets transmitted, per packet")
			}
			return notes
		},
	}
}

// Feature is AF_XDP Tx on a tap: doctor and preflight bind a copy and a
// zero-copy socket to a throwaway tap.
const Feature = "AF_XDP"

// LinkStats reads the counters of the window's tap from inside its
// network namespace: the series' generators read tx_dropped around their
// run time.
func LinkStats(w *workload.Window) (hostnet.LinkStats, error) {
	var s hostnet.LinkStats
	read := func() error {
		var err error
		s, err = hostnet.ReadLinkStats(w.Dev)
		return err
	}
	if w.InNetns != nil {
		return s, w.InNetns(read)
	}
	return s, read()
}

// Frame is the frame of size bytes the AF_XDP generator sends in window
// w: UDP to the guest's MAC and address (DstMAC, Dst) from the tap's
// address (Src); what w leaves empty keeps xsk.Frame's default.
func Frame(w *workload.Window, size int) (xsk.Frame, error) {
	f := xsk.Frame{Size: size}
	if w.DstMAC != "" {
		mac, err := net.ParseMAC(w.DstMAC)
		if err != nil {
			return f, fmt.Errorf("guest MAC %q: %w", w.DstMAC, err)
		}
		f.DstMAC = mac
	}
	for _, a := range []struct {
		s string
		p *netip.Addr
	}{{w.Src, &f.SrcIP}, {w.Dst, &f.DstIP}} {
		if a.s == "" {
			continue
		}
		ip, err := netip.ParseAddr(a.s)
		if err != nil {
			return f, fmt.Errorf("address %q: %w", a.s, err)
		}
		*a.p = ip
	}
	return f, nil
}

// Threads are a generator's sending threads, inside the harness's process
// (not the whole process: false); none before it started.
func Threads(g *xsk.Generator) ([]int, bool) {
	if g == nil {
		return nil, false
	}
	return g.Threads(), false
}
