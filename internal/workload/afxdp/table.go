package afxdp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vnetbench/vnetbench/internal/workload"
	xdp "github.com/vnetbench/vnetbench/runner/afxdp"
	"golang.org/x/sys/unix"
)

// SeriesTable is the table of the AF_XDP series' workloads (this one and
// testpmd): per kernel, the UDP sizes as row groups, copy and zero-copy
// as columns with the speedup, and the rows Transmitted, Lost, Received
// (the guest's sink) and the CPU per packet of the sender (the perf
// target sender) and of the vhost-net worker, where a run had them.
// transmitted defines the workload's Transmitted for the footnote.
func SeriesTable(sender, transmitted string) workload.Table {
	return workload.Table{
		Headline: "tx_pps", ThreadsKey: "threads", ThreadsNoun: "threads",
		Versus: &workload.Versus{RowKey: "pkt_size", ColKey: "mode", RowHeader: "UDP size", RowLabel: "UDP %s",
			Cols:   []workload.VersusCol{{Value: ModeCopy, Header: "copy"}, {Value: ModeZeroCopy, Header: "zero-copy"}},
			Change: "speedup"},
		Rows: func(threads int, seen func(string) bool) []workload.TableRow {
			rows := []workload.TableRow{{Key: "tx_pps", Label: "Transmitted"}}
			if threads > 1 {
				rows = append(rows, workload.TableRow{Key: "tx_pps_thread", Label: "Tx per thread"})
			}
			rows = append(rows, workload.TableRow{Key: "lost_pps", Label: "Lost"})
			if seen("rx_pps") {
				rows = append(rows, workload.TableRow{Key: "rx_pps", Label: "Received"})
			}
			if seen("cpu_per_pkt." + sender) {
				rows = append(rows, workload.TableRow{Key: "cpu_per_pkt." + sender, Label: "CPU/pkt " + sender})
			}
			if seen("cpu_per_pkt.vhost") {
				rows = append(rows, workload.TableRow{Key: "cpu_per_pkt.vhost", Label: "CPU/pkt vhost"})
			}
			return rows
		},
		Notes: func(threads int, seen func(string) bool) []string {
			total := "one thread"
			if threads > 1 {
				total = fmt.Sprintf("total over its %d threads (Tx per thread: the mean of one thread's own rate)", threads)
			}
			notes := []string{
				"UDP N = frames of N bytes without FCS (Ethernet + IPv4 + UDP headers + payload), as testpmd's --txpkts=N",
				transmitted + ", " + total + "; Lost = the tap's tx_dropped counted during that same run / the same run time (one clock)",
			}
			if seen("rx_pps") {
				notes = append(notes, "Received = packets the guest's sink counted (xdp-drop: its XDP program, testpmd rxonly's role) / the window: from the generator's start to its end, on the harness's clock")
			}
			var whose []string
			if seen("cpu_per_pkt." + sender) {
				whose = append(whose, "of the "+sender+" threads (total over them)")
			}
			if seen("cpu_per_pkt.vhost") {
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

func (Workload) Features() []workload.Feature {
	return []workload.Feature{{Name: Feature, Probe: probeFeature}}
}

func probeFeature() workload.Probe {
	c, err := Capability()
	switch {
	case err != nil:
		return workload.Probe{Detail: "not probed: " + err.Error(), Fix: "run doctor as root",
			Why: "cannot probe AF_XDP on a tap: " + err.Error()}
	case c.Copy:
		return workload.Probe{OK: true, Detail: c.String()}
	case errors.Is(c.CopyErr, xdp.ErrNoAFXDP):
		return workload.Probe{Detail: "not available: no AF_XDP sockets (CONFIG_XDP_SOCKETS)",
			Why: fmt.Sprintf("kernel %s has no AF_XDP sockets (CONFIG_XDP_SOCKETS); the afxdp and testpmd workloads need them", kernelRelease())}
	}
	return workload.Probe{Detail: c.String(), Why: "AF_XDP Tx on a tap does not work on this kernel: " + c.String()}
}

// probe is afxdp.Probe (tests replace it, and reset capMu).
var probe = xdp.Probe

var capMu struct {
	sync.Mutex
	done bool
	c    xdp.Capability
}

// Capability is the running kernel's AF_XDP capability on a tap
// (afxdp.Probe), probed once per process.
func Capability() (xdp.Capability, error) {
	capMu.Lock()
	defer capMu.Unlock()
	if capMu.done {
		return capMu.c, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := probe(ctx)
	if err != nil {
		return c, err
	}
	capMu.c, capMu.done = c, true
	return c, nil
}

func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}
