package iperf3

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/perfparse"
	"github.com/vnetbench/vnetbench/runner/proc"
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
	return []string{proc.Cmd{Argv: Args(*c, p.Dst), Netns: p.Netns}.String()}
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
	cfg     Config
	w       *workload.Window
	p       proc.Process
	start   time.Time
	out     bytes.Buffer
	outFile string
}

func (g *generator) Start(ctx context.Context, w *workload.Window) error {
	g.w = w
	cfg := g.cfg
	if w.Duration > 0 {
		cfg.Duration = w.Duration
		cfg.Omit = 0
	}
	if w.Agent != nil {
		if _, err := w.Agent.Do(ctx, agentOp, "start"); err != nil {
			return fmt.Errorf("start iperf3 server in the guest: %w", err)
		}
	}
	g.outFile = filepath.Join(w.Artifacts, "iperf3.json")
	c := proc.Cmd{Argv: Args(cfg, w.Dst), Netns: w.Netns, Stdout: &g.out}
	// The server may need a moment after the agent acknowledged it.
	var err error
	for try := 0; try < 20; try++ {
		g.out.Reset()
		g.p, err = w.Exec.Start(ctx, c)
		if err != nil {
			return fmt.Errorf("iperf3: %w", err)
		}
		g.start = time.Now()
		select {
		case <-g.p.Done():
			if strings.Contains(g.out.String(), "Connection refused") || strings.Contains(g.out.String(), "unable to connect") {
				time.Sleep(250 * time.Millisecond)
				continue
			}
		case <-time.After(300 * time.Millisecond):
		}
		return nil
	}
	return fmt.Errorf("iperf3: the guest's server refused connections: %s", lastLine(g.out.String()))
}

func (g *generator) Threads() ([]int, bool) { return []int{g.p.Pid()}, true }

func (g *generator) Wait(ctx context.Context) (*workload.Result, error) {
	select {
	case <-g.p.Done():
	case <-ctx.Done():
		g.p.Stop(syscall.SIGKILL, time.Second)
		return nil, fmt.Errorf("iperf3: %w", ctx.Err())
	}
	elapsed := time.Since(g.start)
	werr := g.p.Wait()
	os.WriteFile(g.outFile, g.out.Bytes(), 0o644)
	if g.w.Agent != nil {
		// Stop the server; a failure here does not spoil the numbers.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		_, _ = g.w.Agent.Do(sctx, agentOp, "stop")
		cancel()
	}
	res, err := perfparse.ParseIperf3(bytes.NewReader(g.out.Bytes()))
	if err != nil {
		if werr != nil {
			return nil, fmt.Errorf("iperf3: %w", werr)
		}
		return nil, fmt.Errorf("iperf3: parse output: %w", err)
	}
	if res.Error != "" {
		return nil, fmt.Errorf("iperf3: %s", res.Error)
	}
	if werr != nil {
		return nil, fmt.Errorf("iperf3: %w", werr)
	}
	r := &workload.Result{Elapsed: elapsed, BusyFrac: -1, Artifacts: []string{filepath.Join(g.w.RelDir, "iperf3.json")},
		Metrics: map[string]float64{"throughput_bps": res.ReceiverBitsPerSec}}
	if res.HasRetransmits {
		r.Metrics["retransmits"] = float64(res.Retransmits)
	}
	if res.CPU != nil {
		r.Metrics["iperf3_host_cpu_frac"] = res.CPU.HostTotalFrac
		r.BusyFrac = busyFrac(res)
	}
	return r, nil
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

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
