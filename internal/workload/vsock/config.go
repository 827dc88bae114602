// Package vsock is the vsock redirection workload, the experiment of the
// "vsock: support sockmap" series: in the guest, a unix datagram sender
// feeds a redirector that forwards what it receives over a vsock stream
// connection to a server that counts bytes. The redirector is socat
// (Debian's, copied into the guest image with its libraries) or sockmap
// (built into the agent: a SOCKMAP and an sk_skb verdict program that
// redirect the unix socket's ingress to the connected vsock socket's
// egress, loaded with cilium/ebpf, no clang). The server runs on the host
// (transport virtio: the guest reaches CID 2 through QEMU's
// vhost-vsock-pci; in lab mode the lab VM is that host) or in the guest
// itself (transport loopback: vsock_loopback, CID 1).
//
// Its guest side is the agent op "vsock" (GuestOps): start (the loopback
// server, the redirector, then the sender threads) and stop (the sender's
// and the guest's CPU counts, the loopback server's count, teardown). Its
// host side is the Generator: the host's server, the op, the metrics.
//
// What it measures: throughput_bps, the server's bytes x 8 over its own
// interval (from the end of its first read to the end of its last, on its
// clock: the bytes of the first read are left out), shown in MB/s (1e6
// bytes/s) as the series does; redirector_cpu_frac, the CPU time in the
// guest of the redirector's process (socat; none for sockmap, whose
// redirect the kernel does) plus the guest's kworker threads (where
// sockmap's psock backlog and the vsock transport's send work run), from
// /proc/PID/schedstat, over the sender's run, as a fraction of one CPU.
// Its table sets socat and sockmap side by side with the change of the
// medians.
//
// A guest kernel without vsock sockmap (before Linux 6.4: inserting a
// connected vsock socket into a SOCKMAP fails with EOPNOTSUPP) makes the
// sockmap cell n/a with that reason.
package vsock

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// Redirectors and transports.
const (
	Socat   = "socat"
	Sockmap = "sockmap"

	Virtio   = "virtio"
	Loopback = "loopback"
)

// Context IDs (include/uapi/linux/vm_sockets.h).
const (
	cidLocal = 1 // VMADDR_CID_LOCAL: this machine (vsock_loopback)
	cidHost  = 2 // VMADDR_CID_HOST: the host, seen from a guest
)

// MaxPayload is the largest datagram the guest's sender can send: a unix
// datagram socket refuses one longer than its send buffer minus 32 bytes
// (EMSGSIZE, net/unix/af_unix.c), and the sender keeps the kernel's
// default send buffer, net.core.wmem_default, which is 212992 bytes on the
// x86-64 kernels the harness boots.
const MaxPayload = 212992 - 32

// SockmapFeature is what the sockmap redirector needs from the guest's
// kernel.
var SockmapFeature = workload.KernelFeature{Name: "vsock sockmap", Since: "6.4",
	Why: "this kernel has no vsock sockmap support (Linux 6.4+)"}

// Workload is vsock.
type Workload struct{}

// GuestFeatures: the sockmap redirector's.
func (Workload) GuestFeatures() []workload.KernelFeature {
	return []workload.KernelFeature{SockmapFeature}
}

func (Workload) Name() string { return "vsock" }
func (Workload) Doc() string {
	return "unix datagrams in the guest redirected by socat or sockmap to a vsock server that counts bytes (the vsock sockmap series)"
}
func (Workload) New() workload.Config { return &Config{} }

// Config is generator.vsock of a cell.
type Config struct {
	Redirector string
	Transport  string
	Payload    int // bytes per datagram
	Threads    int // sender threads
	Duration   time.Duration
	Port       int // the server's vsock port
	CID        int // the guest's context ID (virtio)
}

func (c *Config) Fields() []schema.Field {
	return []schema.Field{
		schema.Enum(&c.Redirector, "redirector", Socat, Sockmap).Default(Socat).Axis().Bare().
			Doc("what forwards the unix datagrams to vsock: socat = `socat -b PAYLOAD VSOCK-CONNECT:CID:PORT UNIX-RECV:PATH` (Debian's socat, copied into the guest), sockmap = a SOCKMAP and an sk_skb verdict program redirecting the unix socket's ingress to the vsock socket's egress (needs Linux 6.4+ in the guest)"),
		schema.Enum(&c.Transport, "transport", Virtio, Loopback).Default(Virtio).Axis().Bare().
			Doc("virtio = the server runs on the host (or lab VM), the guest reaches it at CID 2 through vhost-vsock-pci; loopback = sender, redirector and server all in the guest (vsock_loopback, CID 1)"),
		schema.Int(&c.Payload, "payload", 1, MaxPayload).Default(65536).Unit("bytes").Axis().Short("p").
			Doc(fmt.Sprintf("bytes per unix datagram; at most %d: the sender keeps the default send buffer (net.core.wmem_default, 212992), and a unix datagram socket refuses datagrams longer than its send buffer minus 32 (EMSGSIZE)", MaxPayload)),
		schema.Int(&c.Threads, "threads", 1, 64).Default(1).Unit("threads").Axis().Short("t").
			Doc("sender threads, each with its own unix datagram socket"),
		schema.Duration(&c.Duration, "duration").Default(10 * time.Second).Doc("how long the sender sends"),
		schema.Int(&c.Port, "port", 1, math.MaxUint32-1).Default(1234).Unit("port").
			Doc("vsock port the server listens on"),
		schema.Int(&c.CID, "cid", 3, math.MaxUint32-1).Default(3).Unit("CID").
			Doc("the guest's vsock context ID (transport virtio; 0-2 and 4294967295 are reserved); a CID another VM holds is refused before the run"),
	}
}

// Resolve: the sender needs a duration; cid applies to virtio only.
func (c *Config) Resolve(r *workload.Resolver) error {
	if c.Duration <= 0 {
		return r.Errorf("duration", "generator.vsock.duration must be above 0, e.g. 10s")
	}
	if c.Transport == Loopback && r.Given("cid") {
		r.Warnf("cid", "generator.vsock.cid is unused with transport loopback (the guest has no vsock device; it reaches itself at CID 1)")
		r.Forget("cid")
	}
	if r.Cell.Backend == "tap+vhost" {
		r.CellWarnf("backend", "the vsock workload does not use the guest's NIC: backend tap+vhost only adds an idle vhost-net worker")
	}
	return nil
}

func (c *Config) Length() (time.Duration, bool) { return c.Duration, true }

// NamePart is "vsock-tN".
func (c *Config) NamePart() (string, []string) {
	return "vsock-t" + strconv.Itoa(c.Threads), []string{"threads"}
}

// Target: the host's vsock server thread (transport virtio).
func (Workload) Target() string { return "vsock" }

// The workload's own metrics.
var (
	RedirectorCPU = metric.Metric{Key: "redirector_cpu_frac", Unit: "fraction", Better: metric.LowerIsBetter,
		Description: "CPU time in the guest of the redirector's process (socat; none for sockmap) plus the guest's kworker threads (sockmap's psock backlog, the vsock transport's send work), over the sender's run, as a fraction of one CPU (/proc/PID/schedstat)"}
	SentBPS = metric.Metric{Key: "vsock_sent_bps", Unit: "bit/s", Better: metric.HigherIsBetter, Rate: true, Diagnostic: true,
		Header: "sent", HeaderNote: "(bits/s the guest's senders wrote, over their run)",
		Description: "bits/s the guest's sender threads wrote into the unix socket, total, over the sender's run (guest clock)"}
	RxBytes = metric.Metric{Key: "vsock_rx_bytes", Unit: "count", Better: metric.Neutral, Diagnostic: true,
		Header: "rx bytes", HeaderNote: "(bytes the server counted in its interval)",
		Description: "bytes the vsock server counted in its interval (throughput_bps's numerator)"}
	GuestCPU = metric.Metric{Key: "guest_cpu_frac", Unit: "fraction", Better: metric.LowerIsBetter, Diagnostic: true,
		Header: "guest CPU", HeaderNote: "(all its CPUs over the sender's run, % of one CPU)",
		Description: "the guest's busy CPU time (all CPUs, /proc/stat) over the sender's run, as a fraction of one CPU"}
)

// Metrics: the server's throughput, the redirector's CPU, diagnostics.
func (Workload) Metrics() []metric.Metric {
	return []metric.Metric{workload.ThroughputBPS, RedirectorCPU, SentBPS, RxBytes, GuestCPU}
}

// Table: socat and sockmap side by side, throughput in MB/s and the
// redirector's CPU.
func (Workload) Table() workload.Table {
	return workload.Table{Headline: metric.ThroughputBPS, ThreadsKey: "threads", ThreadsNoun: "threads",
		Versus: &workload.Versus{RowKey: "payload", ColKey: "redirector", RowHeader: "payload", RowSize: true,
			Cols: []workload.VersusCol{{Value: Socat, Header: Socat}, {Value: Sockmap, Header: Sockmap}}, Change: "change"},
		Rows: func(int, workload.Seen) []workload.TableRow {
			return []workload.TableRow{
				{Key: metric.ThroughputBPS, Label: "Throughput", Scale: units.MBps},
				{Key: "redirector_cpu_frac", Label: "Redirector CPU"},
			}
		},
		Context: []workload.ContextKey{{Key: "transport", Format: func(v string) string { return v + " transport" }}},
		OffNIC:  true,
		Notes: func(int, workload.Seen) []string {
			return []string{
				"Throughput = the bytes the vsock server read after its first read (all sender threads' together) / the time from the end of its first read to the end of its last, on its clock; MB/s = 1e6 bytes/s",
				"Redirector CPU = guest CPU time of socat's process (sockmap has none) plus the guest's kworkers (psock backlog, vsock transport), over the sender's run, from /proc/PID/schedstat; 100% = one CPU",
			}
		}}
}
