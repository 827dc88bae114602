// Package xdpredirect is the XDP_REDIRECT workload: frames that reach
// the tap as xdp_frames through its ndo_xdp_xmit (tun_xdp_xmit, which puts
// them on the same ptr_ring as the skbs of tun_net_xmit, marked with the
// "XDP bit"), the path a change to how tun's ring stops its queue must not
// break or slow.
//
// In the tap's namespace the generator makes a veth pair; on its
// receiving end, in native (driver) mode, an XDP program (assembled with
// cilium/ebpf, no clang) counts every frame and returns
// bpf_redirect_map(devmap, 0), the devmap's slot 0 holding the tap. The
// frames come from internal/xsk's AF_XDP generator on the sending end in
// copy mode: veth_xmit hands each to the peer's NAPI, where the program
// runs (veth's native XDP), and the devmap's flush calls tun_xdp_xmit.
// The frames carry the guest's MAC and address, so the guest receives
// them as any other.
//
// What it measures, over the AF_XDP generator's run time: Sent (frames
// the generator put on the veth), Redirected (the program's
// XDP_REDIRECT verdicts), Transmitted (frames the tap passed to its
// reader: its tx_packets, read once the ring has drained) and Lost
// (Redirected - Transmitted: frames tun_xdp_xmit found no room for in the
// ring, which the devmap frees). The tap's own tx_dropped is shown too:
// since 5.13 tun_xdp_xmit counts one drop per refused batch, not per
// frame, so it can read below Lost.
//
// A kernel that refuses native XDP on a veth or a devmap entry for the
// tap makes the cell n/a with the kernel's reason: generic (skb) XDP
// would send the frames through the tap's skb path, not tun_xdp_xmit.
package xdpredirect

import (
	"fmt"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/workload"
	xdp "github.com/vnetbench/vnetbench/internal/xsk"
	"github.com/vnetbench/vnetbench/internal/xsk/series"
)

// Workload is xdp_redirect.
type Workload struct{}

func (Workload) Name() string { return "xdp_redirect" }
func (Workload) Doc() string {
	return "frames into the tap through XDP_REDIRECT (tun_xdp_xmit): the AF_XDP generator on a veth whose peer's native XDP program redirects every frame to the tap through a devmap"
}
func (Workload) New() workload.Config { return &Config{} }

// Config is generator.xdp_redirect of a cell.
type Config struct {
	PktSize  int
	Duration time.Duration
	Batch    int
}

func (c *Config) Fields() []schema.Field {
	return []schema.Field{
		series.FrameSize(&c.PktSize, "pkt_size"),
		schema.Duration(&c.Duration, "duration").Default(5 * time.Second).
			Doc("how long the AF_XDP generator sends into the veth, from its first frame"),
		schema.Int(&c.Batch, "batch", 1, 2048).Default(xdp.DefaultBatch).Unit("frames").
			Doc("descriptors the generator puts on its Tx ring per kick (sendto)"),
	}
}

// Resolve: the run needs a length.
func (c *Config) Resolve(r *workload.Resolver) error {
	if c.Duration <= 0 {
		return r.Errorf("duration", "generator.xdp_redirect.duration must be positive, got %v; use e.g. duration: 5s", c.Duration)
	}
	return nil
}

func (c *Config) Length() (time.Duration, bool) { return c.Duration, true }

// NamePart is "xdp_redirect"; a pkt_size axis adds its value.
func (c *Config) NamePart() (string, []string) { return "xdp_redirect", nil }

// Path: the frames enter tun's ring through ndo_xdp_xmit, never the
// tap's qdisc.
func (c *Config) Path() string { return "XDP_REDIRECT into tun_xdp_xmit, past the qdisc" }

// LabModules: the veth pair (a module in Debian's kernels).
func (Workload) LabModules() []string { return []string{"veth"} }

// Target: the generator's sending thread, in the harness.
func (Workload) Target() string { return "xdp_redirect" }

// The workload's metrics.
var (
	TxPPS = metric.Metric{Key: metric.XDPTxPPS, Unit: "pps", Better: metric.HigherIsBetter, Rate: true,
		Description: "frames the tap took from XDP_REDIRECT and passed to its reader (its tx_packets once the ring drained) / the AF_XDP generator's run time"}
	LostPPS = metric.Metric{Key: metric.XDPLostPPS, Unit: "pps", Better: metric.LowerIsBetter, Rate: true,
		Description: "frames the XDP program redirected to the tap that the tap did not pass on (redirected - transmitted: tun_xdp_xmit found the ring full) / the generator's run time"}
	RedirectPPS = metric.Metric{Key: "xdp_redirect_pps", Unit: "pps", Better: metric.HigherIsBetter, Rate: true,
		Description: "XDP_REDIRECT verdicts of the program on the veth's receiving end (frames offered to the tap) / the generator's run time"}
	SentPPS = metric.Metric{Key: "xdp_sent_pps", Unit: "pps", Better: metric.HigherIsBetter, Rate: true, Diagnostic: true,
		Header: "sent", HeaderNote: "(frames/s into the veth over the generator's run time)",
		Description: "frames the AF_XDP generator put on the veth (its completions; veth drops included) / its run time"}
)

// Metrics: Transmitted, Lost, Redirected and Sent.
func (Workload) Metrics() []metric.Metric {
	return []metric.Metric{TxPPS, LostPPS, RedirectPPS, SentPPS}
}

// Table: Transmitted and Lost first (the thread's rows), then what was
// offered, the tap's own drop count and what the guest received.
func (Workload) Table() workload.Table {
	return workload.Table{Headline: TxPPS.Key, ThreadsKey: "threads", ThreadsNoun: "threads",
		Rows: func(_ int, seen workload.Seen) []workload.TableRow {
			rows := []workload.TableRow{{Key: TxPPS.Key, Label: "Transmitted"}, {Key: LostPPS.Key, Label: "Lost"},
				{Key: RedirectPPS.Key, Label: "Redirected"}, {Key: metric.LostPPS, Label: "tap tx_dropped"}}
			if seen.Positive(metric.RxPPS) {
				rows = append(rows, workload.TableRow{Key: metric.RxPPS, Label: "Guest received"})
			}
			return rows
		},
		Notes: func(_ int, seen workload.Seen) []string {
			notes := []string{"Transmitted = frames the tap took from XDP_REDIRECT (tun_xdp_xmit) and passed to its reader (tx_packets, after the ring drained); Lost = frames the XDP program redirected to the tap that it did not pass on; Redirected = the program's XDP_REDIRECT verdicts; all per second of the AF_XDP generator's run (copy mode, on a veth whose peer's native XDP program redirects every frame to the tap through a devmap)",
				"tap tx_dropped = the tap's own drop counter per second of the window: tun_xdp_xmit counts one per refused batch (Linux 5.13+), so it can read below Lost"}
			if seen.Positive(metric.RxPPS) {
				notes = append(notes, "Guest received = the guest NIC's rx_packets per second of the window")
			}
			return notes
		},
	}
}

// describe is the plan's line.
func (c *Config) describe(netns, dev string) string {
	where := "the tap " + dev
	if netns != "" {
		where += " in netns " + netns
	}
	tx, rx := vethNames(dev)
	return fmt.Sprintf("xdp_redirect (in the vnetbench process): veth %s/%s beside %s; on %s a native XDP program returns bpf_redirect_map(devmap{0: %s}, 0); AF_XDP (copy mode, 1 socket, batch %d) sends %d-byte UDP frames to the guest on %s for %v; then the veth pair is deleted",
		tx, rx, where, rx, dev, c.Batch, c.PktSize, tx, c.Duration)
}
