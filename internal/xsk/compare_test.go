package xsk

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/perfparse"
)

var (
	compareRounds = flag.Int("afxdp.rounds", 3, "TestCompareTestpmd: alternating rounds of each generator")
	compareWindow = flag.Duration("afxdp.window", 5*time.Second, "TestCompareTestpmd: measured window per round")
	compareOut    = flag.String("afxdp.out", "", "TestCompareTestpmd: directory for testpmd's and perf's output")
)

// childEnv makes the test binary a generator child (see childMain).
const childEnv = "VNB_AFXDP_CHILD"

// childConfig is what a generator child runs.
type childConfig struct {
	Dev   string `json:"dev"`
	Size  int    `json:"size"`
	Batch int    `json:"batch"`
	CPU   int    `json:"cpu"`
}

// childMain runs the generator in copy mode in the namespace it was
// started in until SIGINT, and prints its Result as JSON.
func childMain() int {
	var c childConfig
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &c); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	g, err := Open(Config{Dev: c.Dev, Frame: Frame{Size: c.Size}, Batch: c.Batch, CPUs: []int{c.CPU}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer g.Close()
	res, err := g.Run(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

// sample is one generator's measured window.
type sample struct {
	gen      string
	packets  uint64        // tap tx_packets + tx_dropped over the window
	dropped  uint64        // tap tx_dropped over the window
	window   time.Duration // wall time between the two tap readings
	cpu      time.Duration // perf stat task-clock of the whole process over the window
	selfPPS  float64       // the generator's own rate (Result.PPS; testpmd's median Tx-pps)
	selfCPU  float64       // the generator's own CPU ns per packet (Result; 0 for testpmd)
	selfSent uint64        // completions / testpmd TX-packets over its whole run
	kicks    float64       // sendto calls per packet (this generator only)
}

func (s sample) pps() float64       { return float64(s.packets) / s.window.Seconds() }
func (s sample) cpuPerPkt() float64 { return float64(s.cpu.Nanoseconds()) / float64(s.packets) }

// TestCompareTestpmd sends 64-byte frames in copy mode into one tap,
// drained by a reader pinned to CPU 0, from this generator (a child
// process running Open/Run, pinned to CPU 1) and from dpdk-testpmd
// (txonly, net_af_xdp force_copy=1, forwarding lcore 1), in alternating
// rounds. Each round measures one window: perf stat -e task-clock on the
// generator's process, and the tap's tx_packets + tx_dropped before and
// after (what each generator pushed through the tap, counted by the
// kernel the same way for both). CPU per packet is task-clock over those
// packets; the test fails when this generator's median is above 1.5x
// testpmd's.
func TestCompareTestpmd(t *testing.T) {
	testenv.OptIn(t, "VNETBENCH_AFXDP_COMPARE", "a minute of CPU-per-packet measurement against dpdk-testpmd: "+
		"VNETBENCH_AFXDP_COMPARE=1 go test ./internal/xsk -run TestCompareTestpmd -v [-afxdp.rounds N -afxdp.window D -afxdp.out DIR]")
	needHost(t)
	testenv.NeedCommand(t, "dpdk-testpmd", "dpdk-dev")
	testenv.NeedCommand(t, "perf", "linux-perf")
	ns := testTapQLen(t, 1, 0)
	startDrainOn(t, ns, 1, 0, 0)
	var gos, pmds []sample
	for r := 0; r < *compareRounds; r++ {
		g := measure(t, ns, "go", r)
		p := measure(t, ns, "testpmd", r)
		gos, pmds = append(gos, g), append(pmds, p)
	}
	t.Logf("%-8s %5s %10s %8s %12s %12s %10s %12s %10s", "gen", "round", "pps(tap)", "dropped", "cpu-ns/pkt", "own pps", "own ns/pkt", "own sent", "kicks/pkt")
	for i := range gos {
		for _, s := range []sample{gos[i], pmds[i]} {
			t.Logf("%-8s %5d %10.0f %7.0f%% %12.0f %12.0f %10.0f %12d %10.3f", s.gen, i+1, s.pps(), 100*float64(s.dropped)/float64(s.packets),
				s.cpuPerPkt(), s.selfPPS, s.selfCPU, s.selfSent, s.kicks)
		}
	}
	med := func(ss []sample, f func(sample) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	gc, pc := med(gos, sample.cpuPerPkt), med(pmds, sample.cpuPerPkt)
	t.Logf("median: go %.0f pps %.0f ns/pkt; testpmd %.0f pps %.0f ns/pkt; CPU per packet ratio go/testpmd = %.2f",
		med(gos, sample.pps), gc, med(pmds, sample.pps), pc, gc/pc)
	if gc > 1.5*pc {
		t.Errorf("this generator spends %.2fx testpmd's CPU per packet (aim: 1.5x at most)", gc/pc)
	}
}

// measure runs one generator, waits for it to send, measures a window and
// stops it with SIGINT.
func measure(t *testing.T, ns *hostnet.Netns, gen string, round int) sample {
	t.Helper()
	var argv []string
	env := os.Environ()
	switch gen {
	case "go":
		cfg, _ := json.Marshal(childConfig{Dev: testDev, Size: 64, Batch: DefaultBatch, CPU: 1})
		argv = []string{os.Args[0], "-test.run=^$"}
		env = append(env, childEnv+"="+string(cfg))
	case "testpmd":
		argv = []string{"dpdk-testpmd", "--no-huge", "-m", "512", "--no-pci", "-l", "0,1",
			"--vdev", "net_af_xdp0,iface=" + testDev + ",force_copy=1", "--",
			"--forward-mode=txonly", "--txpkts=64", "--stats-period", "1", "--total-num-mbufs=16384"}
	}
	p := startInNetns(t, ns, env, argv...)
	sent := func() (uint64, uint64) {
		st, err := ns.LinkStats(testDev)
		if err != nil {
			t.Fatal(err)
		}
		return st.TxPackets + st.TxDropped, st.TxDropped
	}
	waitSending(t, ns, p)
	time.Sleep(time.Second)
	p0, d0 := sent()
	t0 := time.Now()
	perf := exec.CommandContext(t.Context(), "perf", "stat", "-e", "task-clock", "-x,", "-p", strconv.Itoa(p.cmd.Process.Pid),
		"--", "sleep", fmt.Sprint(compareWindow.Seconds()))
	perfOut, err := perf.CombinedOutput()
	p1, d1 := sent()
	s := sample{gen: gen, packets: p1 - p0, dropped: d1 - d0, window: time.Since(t0)}
	if err != nil {
		t.Fatalf("perf stat: %v\n%s", err, perfOut)
	}
	ps, err := perfparse.ParsePerfStat(bytes.NewReader(perfOut))
	if err != nil || len(ps.Rows) == 0 || ps.Rows[0].Event != "task-clock" {
		t.Fatalf("perf stat output: %v\n%s", err, perfOut)
	}
	s.cpu = time.Duration(ps.Rows[0].Value * 1e9)

	err = p.interrupt(t)
	if err != nil && gen == "go" {
		t.Fatalf("generator child: %v\n%s", err, p.out.String())
	}
	if *compareOut != "" {
		name := filepath.Join(*compareOut, fmt.Sprintf("%s-round%d", gen, round+1))
		os.WriteFile(name+".out", p.out.Bytes(), 0o644)
		os.WriteFile(name+".perf", perfOut, 0o644)
	}
	switch gen {
	case "go":
		var res Result
		if err := json.Unmarshal(p.stdout.Bytes(), &res); err != nil {
			t.Fatalf("generator child output: %v\n%s", err, p.out.String())
		}
		s.selfPPS, s.selfCPU, s.selfSent = res.PPS(), res.CPUPerPacket(), res.Packets
		if res.Packets > 0 {
			s.kicks = float64(res.Queues[0].Kicks) / float64(res.Packets)
		}
	case "testpmd":
		tp, err := perfparse.ParseTestpmd(bytes.NewReader(p.out.Bytes()))
		if err != nil {
			t.Fatalf("testpmd output: %v", err)
		}
		var rates []float64
		for _, p := range tp.PortStats {
			if p.TxPPS > 0 {
				rates = append(rates, p.TxPPS)
			}
		}
		if len(rates) > 0 {
			slices.Sort(rates)
			s.selfPPS = rates[len(rates)/2]
		}
		if tp.Accumulated != nil {
			s.selfSent = tp.Accumulated.TxPackets
		}
	}
	if s.packets == 0 || s.cpu <= 0 {
		t.Fatalf("%s round %d: %d packets, %v CPU in the window", gen, round+1, s.packets, s.cpu)
	}
	return s
}

// proc is a program running in the test's namespace, in its own process
// group.
type proc struct {
	cmd *exec.Cmd
	// stdout alone, and stdout and stderr together as printed.
	stdout, out bytes.Buffer
	done        bool
}

// startInNetns starts argv in the namespace (ip netns exec); the process
// group is killed at cleanup if the test has not stopped it.
func startInNetns(t testing.TB, ns *hostnet.Netns, env []string, argv ...string) *proc {
	t.Helper()
	p := &proc{}
	p.cmd = exec.CommandContext(t.Context(), "ip", append([]string{"netns", "exec", ns.Name}, argv...)...)
	p.cmd.Env = env
	p.cmd.Stdout = io.MultiWriter(&p.stdout, syncWriter{&p.out})
	p.cmd.Stderr = syncWriter{&p.out}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !p.done {
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			p.cmd.Wait()
		}
	})
	return p
}

// interrupt sends SIGINT and waits (30 s at most) for the exit.
func (p *proc) interrupt(t testing.TB) error {
	t.Helper()
	p.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		p.done = true
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop on SIGINT in 30s", p.cmd.Args[3])
	}
	return nil
}

// waitSending waits until the tap's transmit count moves (60 s at most).
func waitSending(t testing.TB, ns *hostnet.Netns, p *proc) {
	t.Helper()
	sent := func() uint64 {
		st, err := ns.LinkStats(testDev)
		if err != nil {
			t.Fatal(err)
		}
		return st.TxPackets + st.TxDropped
	}
	for start := time.Now(); ; {
		a := sent()
		time.Sleep(200 * time.Millisecond)
		if sent() > a {
			return
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("%s sent nothing in 60s:\n%s", p.cmd.Args[3], p.output())
		}
	}
}

// output is what the process printed so far.
func (p *proc) output() string {
	outMu.Lock()
	defer outMu.Unlock()
	return p.out.String()
}

// syncWriter serializes writes of stdout and stderr into one buffer.
type syncWriter struct{ b *bytes.Buffer }

var outMu sync.Mutex

func (w syncWriter) Write(p []byte) (int, error) {
	outMu.Lock()
	defer outMu.Unlock()
	return w.b.Write(p)
}
