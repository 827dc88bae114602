package iperf3

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/perfparse"
)

// The guest op (GuestOps) that starts and stops the guest's iperf3
// server.
const agentOp = "iperf3"

// ParseKinds: iperf3 --json.
func (Workload) ParseKinds() []perfparse.Kind { return []perfparse.Kind{perfparse.Iperf3Kind} }

func (Workload) Tools() []workload.Tool {
	return []workload.Tool{{Name: "iperf3", Package: "iperf3", Version: []string{"iperf3", "--version"}}}
}

func (c *Config) Needs() workload.Needs {
	return workload.Needs{Tools: []string{"iperf3"}, GuestPrograms: []string{"iperf3"}}
}

func (c *Config) Commands(p workload.PlanEnv) []string {
	var out []string
	for _, argv := range ClientArgs(*c, p.Dst) {
		out = append(out, proc.Cmd{Argv: argv, Netns: p.Netns}.String())
	}
	return out
}

// ClientArgs are the iperf3 clients of a cell: one (Args), or with
// clients: per-stream one per stream, each with one stream to its own
// server port (5201, 5202, ...).
func ClientArgs(c Config, dst string) [][]string {
	if c.Clients != ClientsPerStream || c.Parallel <= 1 {
		return [][]string{Args(c, dst)}
	}
	n := c.Parallel
	c.Parallel = 1
	var out [][]string
	for i := range n {
		a := Args(c, dst)
		out = append(out, append(a[:3:3], append([]string{"-p", strconv.Itoa(serverPort + i)}, a[3:]...)...))
	}
	return out
}

func (c *Config) Generator() workload.Generator { return &generator{cfg: *c} }

// Args is the iperf3 client against the guest's server, JSON output.
func Args(c Config, dst string) []string {
	d := c.Duration
	if d <= 0 {
		d = 10 * time.Second
	}
	a := []string{"iperf3", "-c", dst, "-t", secs(d), "--json"}
	if c.Parallel > 1 {
		a = append(a, "-P", strconv.Itoa(c.Parallel))
	}
	if c.Reverse {
		a = append(a, "-R")
	}
	if c.Omit > 0 {
		a = append(a, "-O", secs(c.Omit))
	}
	if c.Protocol == "udp" {
		a = append(a, "-u")
	}
	if c.Bitrate != "" {
		a = append(a, "-b", c.Bitrate)
	}
	return a
}

// secs formats a duration as whole seconds (at least 1), as iperf3 wants.
func secs(d time.Duration) string {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return strconv.Itoa(s)
}

type generator struct {
	cfg Config
	// stopWait bounds the request that stops the guest's servers (0 =
	// serverStopWait).
	stopWait time.Duration
	w        *workload.Window
	clients  []*client
	start    time.Time
	// serverArt is the artifact of the guest's server output, if any.
	serverArt string
}

// client is one iperf3 -c process and its JSON output.
type client struct {
	p   proc.Process
	out bytes.Buffer
}

func (g *generator) Start(ctx context.Context, w *workload.Window) error {
	g.w = w
	cfg := g.cfg
	if w.Duration > 0 {
		cfg.Duration = w.Duration
		cfg.Omit = 0
	}
	argvs := ClientArgs(cfg, w.Dst)
	if w.Agent != nil {
		var args []string
		if len(argvs) > 1 {
			args = []string{strconv.Itoa(len(argvs))}
		}
		if _, err := w.Agent.Do(ctx, agentOp, "start", args...); err != nil {
			return fmt.Errorf("start iperf3 server in the guest: %w", err)
		}
	}
	g.start = time.Now()
	for _, argv := range argvs {
		cl, err := startClient(ctx, w, argv)
		if err != nil {
			g.stopAll()
			log, serr := g.stopServer(ctx)
			return fmt.Errorf("%w%s%s", err, serverSaid(log), notStopped(serr))
		}
		g.clients = append(g.clients, cl)
	}
	return nil
}

// startClient starts one client, again while the guest's server refuses
// (it may need a moment after the agent acknowledged it).
func startClient(ctx context.Context, w *workload.Window, argv []string) (*client, error) {
	cl := &client{}
	c := proc.Cmd{Argv: argv, Netns: w.Netns, Stdout: &cl.out}
	for try := 0; try < 20; try++ {
		cl.out.Reset()
		p, err := w.Exec.Start(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("iperf3: %w", err)
		}
		cl.p = p
		select {
		case <-p.Done():
			if strings.Contains(cl.out.String(), "Connection refused") || strings.Contains(cl.out.String(), "unable to connect") {
				time.Sleep(250 * time.Millisecond)
				continue
			}
		case <-time.After(300 * time.Millisecond):
		}
		return cl, nil
	}
	return nil, fmt.Errorf("iperf3: the guest's server refused connections: %s", lastLine(cl.out.String()))
}

func (g *generator) stopAll() {
	for _, cl := range g.clients {
		cl.p.Stop(syscall.SIGKILL, time.Second)
	}
}

// serverStopWait bounds the request that stops the guest's servers. The
// agent answers a stop at once; a guest that does not within a few seconds
// is stuck or dead (a kernel fault on its console with QEMU still up), and
// waiting longer only delays the failed cell's report.
const serverStopWait = 5 * time.Second

// stopServer stops the guest's servers, also when ctx has ended (within
// stopWait of its own), and returns what they printed ("" without an
// agent or an answer) and the request's error. Its output is the artifact
// iperf3-server.txt.
func (g *generator) stopServer(ctx context.Context) (string, error) {
	if g.w.Agent == nil {
		return "", nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmp.Or(g.stopWait, serverStopWait))
	defer cancel()
	log, err := g.w.Agent.Do(sctx, agentOp, "stop")
	if err != nil || log == "" {
		return "", err
	}
	if rel, err := g.w.WriteArtifact("iperf3-server.txt", []byte(log)); err == nil {
		g.serverArt = rel
	}
	return log, nil
}

// notStopped is the note a failed client's error carries when the guest's
// servers could not be stopped (err), or "".
func notStopped(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprintf(" (the guest's iperf3 servers were not stopped: %v)", err)
}

func (g *generator) Threads() ([]int, bool) {
	var pids []int
	for _, cl := range g.clients {
		pids = append(pids, cl.p.Pid())
	}
	return pids, true
}

func (g *generator) Wait(ctx context.Context) (*workload.Result, error) {
	for _, cl := range g.clients {
		select {
		case <-cl.p.Done():
		case <-ctx.Done():
			g.stopAll()
			_, serr := g.stopServer(ctx)
			return nil, fmt.Errorf("iperf3: %w%s", ctx.Err(), notStopped(serr))
		}
	}
	elapsed := time.Since(g.start)
	// Stop the servers; a failure here does not spoil the numbers.
	serverLog, serr := g.stopServer(ctx)
	r := &workload.Result{Elapsed: elapsed, BusyFrac: -1, Metrics: map[metric.Key]float64{metric.ThroughputBPS: 0}}
	if serr != nil {
		r.Warnings = append(r.Warnings, "the guest's iperf3 servers were not stopped: "+serr.Error())
	}
	if g.serverArt != "" {
		r.Artifacts = append(r.Artifacts, g.serverArt)
	}
	var cpu, busy float64
	var srtts []float64 // the TCP senders' smoothed RTTs, every stream and interval
	var udp udpReceivers
	hasCPU := false
	for i, cl := range g.clients {
		res, err := g.clientResult(i, cl, serverLog, r)
		if err != nil {
			return nil, err
		}
		for _, iv := range res.Intervals {
			for _, st := range iv.Streams {
				if st.RTTS != nil && !st.Omitted {
					srtts = append(srtts, *st.RTTS)
				}
			}
		}
		// The clients run side by side over the same interval: their
		// receivers' rates add up.
		r.Metrics[metric.ThroughputBPS] += res.Receiver.BitsPerSec
		if res.Retransmits != nil {
			r.Metrics[metric.Retransmits] += float64(*res.Retransmits)
		}
		udp.add(res)
		if res.CPU != nil {
			cpu += res.CPU.HostTotalFrac
			busy += busyFrac(res)
			hasCPU = true
		}
	}
	if len(srtts) > 0 {
		slices.Sort(srtts)
		r.Metrics[metric.Iperf3SRTTS] = srtts[(len(srtts)-1)/2]
	}
	udp.set(r.Metrics)
	if hasCPU {
		// iperf3_host_cpu_frac: all clients' CPU, in CPUs; busy: the
		// mean over the clients (each a fraction of its threads).
		r.Metrics["iperf3_host_cpu_frac"] = cpu
		r.BusyFrac = busy / float64(len(g.clients))
	}
	return r, nil
}

// clientResult is client i's parsed output, which it also keeps as an
// artifact of r: an error where the client failed, iperf3 printed one
// (a test broken off voids the sample) or no receiver's total.
func (g *generator) clientResult(i int, cl *client, serverLog string, r *workload.Result) (*perfparse.Iperf3, error) {
	werr := cl.p.Wait()
	name := "iperf3.json"
	if len(g.clients) > 1 {
		name = fmt.Sprintf("iperf3-%d.json", i)
	}
	if rel, err := g.w.WriteArtifact(name, cl.out.Bytes()); err == nil {
		r.Artifacts = append(r.Artifacts, rel)
	}
	res, err := perfparse.ParseIperf3(bytes.NewReader(cl.out.Bytes()))
	if err != nil {
		if werr != nil {
			return nil, fmt.Errorf("iperf3: %w", werr)
		}
		return nil, fmt.Errorf("iperf3: parse output: %w", err)
	}
	if res.Error != "" {
		err := fmt.Errorf("iperf3: %s%s", res.Error, serverSaid(serverLog))
		if cause := brokenOff(res.Error); cause != "" {
			// The runner runs such a sample once more, and the
			// sample says why.
			err = fault.VoidBecause(cause, err)
		}
		return nil, err
	}
	if werr != nil {
		return nil, fmt.Errorf("iperf3: %w", werr)
	}
	if res.Receiver == nil {
		// UDP output of iperf3 before 3.10: its only total is the
		// sender's, which is no throughput.
		return nil, fmt.Errorf("iperf3: %q printed no receiver's total (UDP before iperf3 3.10 reports only the sender's rate); use iperf3 3.10 or later in the guest", res.Version)
	}
	return res, nil
}

// udpReceivers adds up the UDP receivers' jitter and loss over a cell's
// clients, which run side by side over the same interval.
type udpReceivers struct {
	jitter  float64 // each client's jitter times its streams
	streams int     // the streams with a jitter
	lost    uint64  // datagrams the receivers counted lost
	sent    uint64  // datagrams the senders sent
}

// add adds one client's UDP receiver (nil for TCP). Its jitter is iperf3's
// sum_received jitter, the mean over the client's streams (iperf3's
// avg_jitter), so it counts once per stream; its loss is lost_packets out
// of the sender's datagrams, the share iperf3's lost_percent is (its
// denominator is the sender's count where the output has it, else the
// receiver's: iperf_print_results in iperf 3.12).
func (u *udpReceivers) add(res *perfparse.Iperf3) {
	r := res.Receiver
	if res.Protocol != "UDP" || r == nil {
		return
	}
	if r.JitterS != nil {
		n := max(1, res.NumStreams)
		u.jitter += *r.JitterS * float64(n)
		u.streams += n
	}
	sent := r.Packets
	if s := res.Sender; s != nil && s.Packets != nil && *s.Packets > 0 {
		sent = s.Packets
	}
	if r.LostPackets != nil && sent != nil {
		u.lost += *r.LostPackets
		u.sent += *sent
	}
}

// set sets iperf3_jitter_s (the mean over all streams) and
// iperf3_lost_frac (all receivers' lost datagrams over all datagrams
// sent) where a UDP receiver reported them and datagrams were sent.
func (u *udpReceivers) set(m map[metric.Key]float64) {
	if u.streams > 0 {
		m[metric.Iperf3JitterS] = u.jitter / float64(u.streams)
	}
	if u.sent > 0 {
		m[metric.Iperf3LostFrac] = float64(u.lost) / float64(u.sent)
	}
}

// busyFrac is how busy the iperf3 client's threads were: 1 = each ran all
// the time. iperf3's host_total is the process's CPU time (clock())
// over the test's wall time, so a fraction of ONE CPU, not of the
// machine (a 2-CPU host measured 41.9% = (0.02 s user + 0.82 s system) /
// 2.00 s). Before 3.16 iperf3 runs every stream on one thread; 3.16 and
// later run a thread per stream, whose CPU times add up.
func busyFrac(res *perfparse.Iperf3) float64 {
	if res.CPU == nil {
		return -1
	}
	threads := 1
	if major, minor, ok := iperfVersion(res.Version); ok && (major > 3 || major == 3 && minor >= 16) {
		threads = max(1, res.NumStreams)
	}
	return min(1, res.CPU.HostTotalFrac/float64(threads))
}

// iperfVersion reads start.version ("iperf 3.12", "iperf 3.17.1",
// "iperf 3.16+") as major, minor.
func iperfVersion(v string) (major, minor int, ok bool) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "iperf ")
	maj, rest, _ := strings.Cut(v, ".")
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		rest = rest[:end]
	}
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(rest)
	return a, b, err1 == nil && err2 == nil
}

// brokenOff returns the cause when iperf3's error is the guest's server
// breaking the test off (its streams reset or its control connection
// closed), "" otherwise: what the test measured is void. Seen once in
// CI's quickstart under TCG (a stream reset in the second repetition,
// right after a trafgen flood), not in 25 runs here with and without CPU
// contention; a kernel that resets streams every time still fails the
// cell on the second try.
func brokenOff(msg string) string {
	for _, c := range [][2]string{
		{"Connection reset by peer", "connection reset by peer"},
		{"closed unexpectedly", "control socket closed unexpectedly"},
		{"server has terminated", "the server terminated"},
	} {
		if strings.Contains(msg, c[0]) {
			return c[1]
		}
	}
	return ""
}

// serverSaid quotes the guest server's last error line for a failed
// client's error, or "" when it printed none.
func serverSaid(log string) string {
	var last string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "error") {
			last = strings.TrimSpace(l)
		}
	}
	if last == "" {
		return ""
	}
	return " (the guest's server: " + last + ")"
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
