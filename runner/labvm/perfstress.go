package labvm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/ledger"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/workload/pktgen"
	"github.com/vnetbench/vnetbench/runner/perfkeys"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/vmimages"
)

// Orders of perf against pktgen in a perf stress run.
const (
	// PerfDuring attaches and detaches perf while pktgen floods: pktgen
	// runs the whole time and perf sessions come and go.
	PerfDuring = "during"
	// PerfAfterStart is the order the runner used before the lockup fix:
	// pktgen starts, perf attaches to the busy kpktgend, pktgen ends,
	// perf stops.
	PerfAfterStart = "after-start"
	// PerfAround attaches perf before pktgen's start write and stops it
	// after pktgen ended and was reset: perf never attaches to or
	// detaches from a kpktgend that is sending.
	PerfAround = "around"
)

// PerfStressConfig is a reproducer for perf attaching to and detaching
// from busy kernel threads inside a lab VM: pktgen sends into a tap (read
// by the test itself, or by a nested guest) and `perf stat -t` sessions on
// the kpktgend threads (and the nested guest's vhost worker) come and go
// in a loop, in a given order against pktgen's start and stop.
type PerfStressConfig struct {
	Iterations int           // perf sessions (default 100)
	Order      string        // PerfDuring, PerfAfterStart or PerfAround
	Threads    int           // pktgen threads (kpktgend_0..N-1), default 1
	Hold       time.Duration // pktgen run (and perf session) per iteration (default 300ms)
	// Drain reads the tap in the test (nil guest): packets are consumed,
	// as by a guest; without it the ring fills and pktgen counts errors.
	Drain bool
	// Guest, when set, boots a nested guest on the tap with this backend
	// ("tap" or "tap+vhost") instead of holding the tap open here; perf
	// then also watches the vhost worker.
	Guest    string
	SelfTest SelfTestConfig // the nested guest's kernel (with Guest)
	// Keep holds the perf static keys on while the stress runs
	// (perfkeys) and releases them at its end, as runner.Run does; lab
	// init holds them for the lab's whole life unless the lab was started
	// with Config.NoPerfKeys.
	Keep bool
	// ExitTimeout is how long a perf may take to exit after SIGINT before
	// the run calls it stuck (default 60s).
	ExitTimeout time.Duration
	OutDir      string
	Log         io.Writer
}

// PerfStressResult is written as perfstress.json in OutDir.
type PerfStressResult struct {
	Kernel     string  `json:"kernel"`
	CPUs       int     `json:"cpus"`
	Order      string  `json:"order"`
	Keep       bool    `json:"keep"`
	Guest      string  `json:"guest,omitempty"`
	Iterations int     `json:"iterations"` // sessions finished
	Stuck      int     `json:"stuck"`      // sessions whose perf did not exit
	MaxOpenS   float64 `json:"max_open_s"` // perf start to counters open
	MaxExitS   float64 `json:"max_exit_s"` // SIGINT to perf exit
	Packets    uint64  `json:"packets"`
	Seconds    float64 `json:"seconds"`
}

// ErrPerfStuck is a perf that did not exit after SIGINT and SIGKILL: it
// sits in the kernel.
var ErrPerfStuck = errors.New("perf did not exit")

// PerfStress runs the reproducer; it needs pktgen and perf, so it runs
// inside a lab VM.
func PerfStress(ctx context.Context, c PerfStressConfig) (*PerfStressResult, error) {
	if !inLab() {
		return nil, errNotInLab
	}
	if err := c.prepare(); err != nil {
		return nil, err
	}
	rel, _ := hostnet.KernelRelease() // "" when unknown
	res := &PerfStressResult{Kernel: rel, CPUs: numCPU(), Order: c.Order, Guest: c.Guest, Keep: c.Keep}
	if c.Keep {
		keys, err := perfkeys.Hold()
		if err != nil {
			return nil, err
		}
		defer keys.Release()
	}
	vhost, closeSink, err := c.openSink(ctx)
	if err != nil {
		return nil, err
	}
	defer closeSink()
	kp, err := kpktgendThreads(c.Threads)
	if err != nil {
		return nil, err
	}
	s := &perfStress{c: &c, res: res, targets: [][]int{kp}, flood: c.flood()}
	if len(vhost) > 0 {
		s.targets = append(s.targets, vhost)
	}
	fmt.Fprintf(c.Log, "perf-stress: kernel %s, %d CPUs, order %s, keep %v, guest %q, kpktgend %v, vhost %v\n", res.Kernel, res.CPUs, c.Order, c.Keep, c.Guest, kp, vhost)
	s.t0 = time.Now()
	if c.Order == PerfDuring {
		fc := s.flood
		fc.Duration = 24 * time.Hour
		if s.during, err = fc.Start(ctx); err != nil {
			return res, err
		}
	}
	defer s.finish()
	for i := 0; i < c.Iterations; i++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if err := s.iteration(ctx, i); err != nil {
			return res, err
		}
	}
	return res, nil
}

// prepare fills in c's defaults, checks its order, creates OutDir and
// turns the kernel's console messages up for a lockup's traces.
func (c *PerfStressConfig) prepare() error {
	if c.Iterations <= 0 {
		c.Iterations = 100
	}
	if c.Threads <= 0 {
		c.Threads = 1
	}
	if c.Hold <= 0 {
		c.Hold = 300 * time.Millisecond
	}
	if c.ExitTimeout <= 0 {
		c.ExitTimeout = 60 * time.Second
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	switch c.Order {
	case PerfDuring, PerfAfterStart, PerfAround:
	default:
		return inputErrorf("perf order %q; use %s, %s or %s", c.Order, PerfDuring, PerfAfterStart, PerfAround)
	}
	if err := os.MkdirAll(c.OutDir, 0o755); err != nil {
		return err
	}
	// Full kernel messages on the console (stack traces of a lockup are
	// KERN_WARNING and below), and every CPU's backtrace on a soft lockup.
	os.WriteFile("/proc/sys/kernel/printk", []byte("8"), 0)
	os.WriteFile("/proc/sys/kernel/softlockup_all_cpu_backtrace", []byte("1"), 0)
	return nil
}

// openSink readies what reads pktgen's packets: the tap held open here
// (drained when c.Drain), or a nested guest on it (c.Guest), whose vhost
// worker threads it returns. closeSink undoes it.
func (c *PerfStressConfig) openSink(ctx context.Context) (vhost []int, closeSink func(), err error) {
	if c.Guest != "" {
		return c.bootStressGuest(ctx)
	}
	fd, err := openTap(selfTestTap)
	if err != nil {
		return nil, nil, err
	}
	if err := linkUp(selfTestTap); err != nil {
		unix.Close(fd)
		return nil, nil, err
	}
	if c.Drain {
		go drain(fd)
	}
	return nil, func() { unix.Close(fd) }, nil
}

// bootStressGuest boots the nested guest on the tap and returns its vhost
// worker threads; closeSink stops it.
func (c *PerfStressConfig) bootStressGuest(ctx context.Context) (vhost []int, closeSink func(), err error) {
	sc := c.SelfTest
	if sc.Binary == "" {
		if sc.Binary, err = os.Executable(); err != nil {
			return nil, nil, err
		}
	}
	if sc.GuestAppend == "" {
		sc.GuestAppend = vmimages.TCGTuning
	}
	sc.OutDir, sc.Log = c.OutDir, c.Log
	tmp, removeTmp, err := ledger.MkdirTemp(fmt.Sprintf("vnb-perfstress-%d", os.Getpid()))
	if err != nil {
		return nil, nil, err
	}
	initrd, err := nestedInitrd(sc, tmp)
	if err != nil {
		removeTmp()
		return nil, nil, err
	}
	vm, _, err := bootNestedVM(ctx, sc, c.Guest, initrd, tmp)
	if err != nil {
		removeTmp()
		return nil, nil, err
	}
	return qemu.VhostThreads(vm.Pid()), func() {
		vm.Close()
		removeTmp()
	}, nil
}

// kpktgendThreads returns the thread IDs of kpktgend_0..n-1.
func kpktgendThreads(n int) ([]int, error) {
	var kp []int
	for i := 0; i < n; i++ {
		name := "kpktgend_" + strconv.Itoa(i)
		kp = append(kp, proc.KernelThreads(func(s string) bool { return s == name })...)
	}
	if len(kp) != n {
		return nil, fmt.Errorf("want %d kpktgend threads, found %d (is pktgen loaded, and are there enough CPUs?)", n, len(kp))
	}
	return kp, nil
}

// flood is one iteration's pktgen run into the tap: c.Threads threads
// for c.Hold (the pktgen workload's Flood).
func (c *PerfStressConfig) flood() pktgen.Flood {
	return pktgen.Flood{Dev: selfTestTap, Threads: c.Threads, Dst: "10.0.0.2", DstMAC: selfTestMAC, Duration: c.Hold}
}

// perfStress is a running perf stress: its perf targets (kpktgend, the
// vhost worker), pktgen and the flood of PerfDuring.
type perfStress struct {
	c       *PerfStressConfig
	res     *PerfStressResult
	targets [][]int
	flood   pktgen.Flood     // one iteration's
	during  *pktgen.FloodRun // PerfDuring's, across the iterations
	t0      time.Time
}

// iteration is one perf session on every target, in c.Order against
// pktgen's start and end.
func (s *perfStress) iteration(ctx context.Context, i int) error {
	c, res := s.c, s.res
	var sess *pktgen.FloodRun
	var err error
	if c.Order == PerfAfterStart {
		if sess, err = s.flood.Start(ctx); err != nil {
			return err
		}
	}
	perfs, err := s.startPerfs(ctx, i, sess)
	if err != nil {
		return err
	}
	switch c.Order {
	case PerfDuring:
		time.Sleep(c.Hold)
	case PerfAround:
		if sess, err = s.flood.Start(ctx); err != nil {
			stopStressPerfs(perfs, c.ExitTimeout)
			return err
		}
	}
	if sess != nil {
		r, err := sess.Wait(ctx)
		res.Packets += r.Packets
		if err != nil {
			stopStressPerfs(perfs, c.ExitTimeout)
			return fmt.Errorf("iteration %d: pktgen: %w", i, err)
		}
	}
	exit, err := stopStressPerfs(perfs, c.ExitTimeout)
	res.MaxExitS = max(res.MaxExitS, exit.Seconds())
	if err != nil {
		res.Stuck++
		fmt.Fprintf(c.Log, "perf-stress: iteration %d: %v\n", i, err)
		return err
	}
	res.Iterations++
	if (i+1)%10 == 0 {
		fmt.Fprintf(c.Log, "perf-stress: %d/%d sessions, max open %.2fs, max exit %.2fs, %d packets, %.0fs\n",
			i+1, c.Iterations, res.MaxOpenS, res.MaxExitS, res.Packets, time.Since(s.t0).Seconds())
	}
	return nil
}

// startPerfs starts a perf on each target; on failure it stops those it
// started and waits for sess (pktgen already sending, or nil).
func (s *perfStress) startPerfs(ctx context.Context, i int, sess *pktgen.FloodRun) ([]*stressPerf, error) {
	var perfs []*stressPerf
	for j, tids := range s.targets {
		p, err := startStressPerf(ctx, tids, filepath.Join(s.c.OutDir, fmt.Sprintf("perf-%d.csv", j)))
		if err != nil {
			stopStressPerfs(perfs, s.c.ExitTimeout)
			if sess != nil {
				sess.Wait(ctx)
			}
			return nil, fmt.Errorf("iteration %d: %w", i, err)
		}
		s.res.MaxOpenS = max(s.res.MaxOpenS, p.open.Seconds())
		perfs = append(perfs, p)
	}
	return perfs, nil
}

// finish stops the flood, counts its packets and writes perfstress.json.
func (s *perfStress) finish() {
	if s.during != nil {
		s.during.Stop()
		r, _ := s.during.Wait(context.Background())
		s.res.Packets += r.Packets
	}
	s.res.Seconds = time.Since(s.t0).Seconds()
	b, _ := json.MarshalIndent(s.res, "", "  ")
	writeOut(s.c.OutDir, "perfstress.json", b)
}

type stressPerf struct {
	p    proc.Process
	open time.Duration
}

func startStressPerf(ctx context.Context, tids []int, out string) (*stressPerf, error) {
	var ts []string
	for _, t := range tids {
		ts = append(ts, strconv.Itoa(t))
	}
	t0 := time.Now()
	// Its own lifetime: stopStressPerfs ends it.
	pr, err := (proc.Real{}).Start(context.WithoutCancel(ctx), proc.Cmd{Argv: []string{"perf", "stat", "-x,", "--no-big-num",
		"-e", "task-clock,context-switches,cpu-migrations", "-t", strings.Join(ts, ","), "-o", out}})
	if err != nil {
		return nil, err
	}
	p := &stressPerf{p: pr}
	fdDir := "/proc/" + strconv.Itoa(pr.Pid()) + "/fd"
	for {
		if ents, err := os.ReadDir(fdDir); err == nil {
			for _, e := range ents {
				if l, _ := os.Readlink(filepath.Join(fdDir, e.Name())); l == "anon_inode:[perf_event]" {
					p.open = time.Since(t0)
					return p, nil
				}
			}
		}
		select {
		case <-pr.Done():
			return nil, fmt.Errorf("perf exited at start: %v", pr.Wait())
		case <-ctx.Done():
			pr.Signal(syscall.SIGKILL)
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stopStressPerfs sends SIGINT to every perf and waits; a perf that does
// not exit within timeout gets SIGKILL, and one that survives that is
// stuck in the kernel.
func stopStressPerfs(perfs []*stressPerf, timeout time.Duration) (time.Duration, error) {
	t0 := time.Now()
	for _, p := range perfs {
		p.p.Signal(syscall.SIGINT)
	}
	var errs []error
	for _, p := range perfs {
		select {
		case <-p.p.Done():
			continue
		case <-time.After(timeout - time.Since(t0)):
		}
		p.p.Signal(syscall.SIGKILL)
		select {
		case <-p.p.Done():
			errs = append(errs, fmt.Errorf("perf pid %d needed SIGKILL after %v", p.p.Pid(), timeout))
		case <-time.After(10 * time.Second):
			errs = append(errs, fmt.Errorf("%w: pid %d, %v after SIGINT and SIGKILL (wchan %s)", ErrPerfStuck, p.p.Pid(),
				time.Since(t0).Round(time.Second), wchan(p.p.Pid())))
		}
	}
	return time.Since(t0), errors.Join(errs...)
}

func wchan(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/wchan")
	s, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stack")
	return strings.TrimSpace(string(b)) + " " + strings.ReplaceAll(strings.TrimSpace(string(s)), "\n", " | ")
}

// openTap creates tap name and returns its file descriptor: the tap has
// carrier while it is open.
func openTap(name string) (int, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("TUNSETIFF %s: %w", name, err)
	}
	return fd, nil
}

func drain(fd int) {
	buf := make([]byte, 65536)
	for {
		if _, err := unix.Read(fd, buf); err != nil && err != unix.EINTR {
			return
		}
	}
}

func numCPU() int {
	var s unix.CPUSet
	if unix.SchedGetaffinity(0, &s) != nil {
		return 0
	}
	return s.Count()
}
