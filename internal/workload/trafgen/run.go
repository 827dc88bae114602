package trafgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/perfparse"
)

// ParseKinds: trafgen's summary.
func (Workload) ParseKinds() []perfparse.Kind { return []perfparse.Kind{perfparse.TrafgenKind} }

func (Workload) Tools() []workload.Tool {
	return []workload.Tool{{Name: "trafgen", Package: "netsniff-ng", Version: []string{"trafgen", "--version"}}}
}

func (c *Config) Needs() workload.Needs { return workload.Needs{Tools: []string{"trafgen"}} }

func (c *Config) Commands(p workload.PlanEnv) []string {
	return []string{proc.Cmd{Argv: Args(*c, p.Dev, p.Artifacts+"/trafgen.cfg"), Netns: p.Netns}.String()}
}

func (c *Config) Generator() workload.Generator { return &generator{cfg: *c} }

// PacketConfig is trafgen's packet configuration for one UDP frame of
// pktSize bytes (without FCS) from the tap (srcMAC, srcIP) to the guest.
func PacketConfig(pktSize int, srcMAC, srcIP, dstMAC, dstIP string) string {
	if pktSize < 42 {
		pktSize = 42
	}
	fill := pktSize - 14 - 20 - 8
	return fmt.Sprintf("{ eth(da=%s, sa=%s), ipv4(sa=%s, da=%s), udp(sp=9, dp=9), fill(0x00, %d) }\n",
		dstMAC, srcMAC, srcIP, dstIP, fill)
}

// Args runs trafgen on dev with the config file cfg. It runs until
// SIGINT (the generator bounds it by the duration). --no-sock-mem and
// --notouch-irq keep trafgen from changing host-wide settings.
func Args(t Config, dev, cfg string) []string {
	cpus := t.CPUs
	if cpus <= 0 {
		cpus = 1
	}
	a := []string{"trafgen", "--dev", dev, "--conf", cfg, "--cpus", strconv.Itoa(cpus), "--no-sock-mem", "--notouch-irq"}
	if t.Rate != "" {
		a = append(a, "--rate", t.Rate)
	}
	return a
}

type generator struct {
	cfg     Config
	w       *workload.Window
	p       proc.Process
	start   time.Time
	dur     time.Duration
	cpu0    map[int]uint64
	outFile string
}

func (g *generator) Start(ctx context.Context, w *workload.Window) error {
	g.w = w
	g.dur = g.cfg.Duration
	if w.Duration > 0 {
		g.dur = w.Duration
	}
	if g.dur <= 0 {
		g.dur = 10 * time.Second
	}
	if _, err := w.WriteArtifact("trafgen.cfg", []byte(PacketConfig(g.cfg.PktSize, w.DevMAC, w.Src, w.DstMAC, w.Dst))); err != nil {
		return fmt.Errorf("trafgen: %w", err)
	}
	cfgPath := filepath.Join(w.Artifacts, "trafgen.cfg")
	out, outFile, err := w.CreateArtifact("trafgen.txt")
	g.outFile = outFile
	if err != nil {
		return fmt.Errorf("trafgen: %w", err)
	}
	// trafgen creates its workers' shared counters as a file in its
	// working directory and maps it MAP_SHARED, which a 9p mount (a lab
	// VM's run directory) refuses ("Cannot setup shared variable!"): it
	// runs in the temporary directory, a tmpfs in a lab.
	c := proc.Cmd{Argv: Args(g.cfg, w.Dev, cfgPath), Netns: w.Netns, Dir: os.TempDir(), Stdout: out, Stderr: out}
	p, err := w.Exec.Start(ctx, c)
	if err != nil {
		out.Close()
		return fmt.Errorf("trafgen: %w", err)
	}
	g.p = p
	g.start = time.Now()
	go func() { p.Wait(); out.Close() }()
	// trafgen forks its workers right away; give them a moment to appear
	// so perf and pinning see them.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if len(proc.Children(p.Pid())) > 0 {
			break
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(p.Pid())); err != nil {
			break // not a process of this host (test fakes)
		}
		select {
		case <-p.Done():
			return fmt.Errorf("trafgen exited at start: %w", p.Wait())
		case <-time.After(20 * time.Millisecond):
		}
	}
	g.cpu0 = proc.CPUTicks(g.pids())
	return nil
}

func (g *generator) pids() []int {
	if g.p == nil {
		return nil
	}
	return append([]int{g.p.Pid()}, proc.Children(g.p.Pid())...)
}

func (g *generator) Threads() ([]int, bool) {
	kids := proc.Children(g.p.Pid())
	if len(kids) == 0 {
		return []int{g.p.Pid()}, true
	}
	return kids, true
}

func (g *generator) Wait(ctx context.Context) (*workload.Result, error) {
	t := time.NewTimer(time.Until(g.start.Add(g.dur)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-g.p.Done():
		return nil, fmt.Errorf("trafgen exited before its duration: %w", proc.WaitErr(g.p))
	case <-ctx.Done():
		g.p.Stop(syscall.SIGKILL, time.Second)
		return nil, fmt.Errorf("trafgen: %w", ctx.Err())
	}
	cpu1 := proc.CPUTicks(g.pids())
	elapsed := time.Since(g.start)
	// SIGINT: trafgen prints its summary and exits.
	err := g.p.Stop(syscall.SIGINT, 5*time.Second)
	if err != nil && proc.ExitCodeOf(err) != 0 && !proc.IsSignal(err, "interrupt") {
		return nil, fmt.Errorf("trafgen: %w", err)
	}
	out, _ := os.ReadFile(g.outFile)
	pkts, perr := parsePackets(out)
	if perr != nil {
		return nil, fmt.Errorf("trafgen: %w (output in %s)", perr, g.outFile)
	}
	r := &workload.Result{Elapsed: elapsed, BusyFrac: proc.BusyFrac(g.cpu0, cpu1, elapsed, max(1, g.cfg.CPUs)),
		Artifacts: []string{filepath.Join(g.w.RelDir, "trafgen.cfg"), filepath.Join(g.w.RelDir, "trafgen.txt")},
		Metrics:   map[metric.Key]float64{metric.TxPPS: 0}, Packets: pkts}
	if elapsed > 0 {
		r.Metrics[metric.TxPPS] = float64(pkts) / elapsed.Seconds()
	}
	return r, nil
}

// parsePackets reads the "N packets outgoing" summary trafgen prints on
// SIGINT.
func parsePackets(out []byte) (uint64, error) {
	t, err := perfparse.ParseTrafgen(bytes.NewReader(out))
	if err != nil {
		return 0, err
	}
	if !t.Complete {
		return 0, errors.New(`no "packets outgoing" summary in trafgen's output`)
	}
	return t.Packets, nil
}
