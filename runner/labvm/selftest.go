package labvm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/ledger"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/internal/workload/pktgen"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/vmimages"
)

// SelfTestConfig is an in-lab check of the lab's pktgen, tap and vhost-net
// against a nested guest: for each backend, boot the nested guest on a tap,
// run pktgen (sample01 simple, one thread) into it, read the counters.
type SelfTestConfig struct {
	GuestKernel  string   // nested guest bzImage (the cloud flavour boots fastest)
	GuestModules string   // its modules directory
	Backends     []string // "tap", "tap+vhost"
	Count        uint64   // packets (default 20000)
	Duration     time.Duration
	OutDir       string // results JSON and nested console logs
	Binary       string // vnetbench binary for the nested /init (default this executable)
	BootTimeout  time.Duration
	// GuestAppend are the nested guest's kernel parameters in place of
	// its tuning (initCmdline); default vmimages.TCGTuning, as it runs
	// under TCG.
	GuestAppend string
	// Variants, when set, repeats each backend once per tuning (instead
	// of GuestAppend), to compare boot times.
	Variants []string
	// BootOnly boots each backend's nested guest and measures, no pktgen.
	BootOnly bool
	Log      io.Writer
	// consoleSuffix tells the consoles of Variants apart.
	consoleSuffix string
	// consoles are the console logs this invocation made in OutDir
	// (newConsole), shared by the copies of the config.
	consoles map[string]bool
}

// SelfTestBackend is one backend's measurement.
type SelfTestBackend struct {
	Backend      string  `json:"backend"`
	Append       string  `json:"append,omitempty"`
	InitUptime   float64 `json:"nested_init_uptime_s"` // guest uptime when /init ran
	ModulesMs    int64   `json:"nested_modules_ms"`
	BootSeconds  float64 `json:"nested_boot_s"`
	ReadySeconds float64 `json:"nested_ready_uptime_s"` // guest uptime at ready
	Packets      uint64  `json:"packets"`
	PPS          float64 `json:"tx_pps"`
	Errors       uint64  `json:"pktgen_errors"`
	Stopped      bool    `json:"stopped"`
	TapTx        uint64  `json:"tap_tx_packets"`
	TapDropped   uint64  `json:"tap_tx_dropped"`
	WindowS      float64 `json:"window_s"`
	LostPPS      float64 `json:"lost_pps"`
}

// SelfTestResult is written as selftest.json in OutDir.
type SelfTestResult struct {
	Kernel   string            `json:"kernel"`
	Backends []SelfTestBackend `json:"backends"`
}

const selfTestTap = "vnbt0"
const selfTestMAC = "52:54:00:12:34:56"

// SelfTest runs the check; it needs pktgen, tun and (for tap+vhost)
// vhost-net, so it runs inside a lab VM.
func SelfTest(ctx context.Context, c SelfTestConfig) (*SelfTestResult, error) {
	if c.Count == 0 {
		c.Count = 20000
	}
	if c.Duration == 0 {
		c.Duration = 60 * time.Second
	}
	if c.BootTimeout == 0 {
		c.BootTimeout = 400 * time.Second
	}
	if c.GuestAppend == "" && len(c.Variants) == 0 {
		c.GuestAppend = vmimages.TCGTuning
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Binary == "" {
		var err error
		if c.Binary, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	if err := checkBinary(c.Binary); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.OutDir, 0o755); err != nil {
		return nil, err
	}
	c.consoles = map[string]bool{}
	tmp, removeTmp, err := ledger.MkdirTemp(fmt.Sprintf("vnb-selftest-%d", os.Getpid()))
	if err != nil {
		return nil, err
	}
	defer removeTmp()
	initrd, err := nestedInitrd(c, tmp)
	if err != nil {
		return nil, err
	}
	rel, _ := hostnet.KernelRelease() // "" when unknown
	res := &SelfTestResult{Kernel: rel}
	variants := c.Variants
	if len(variants) == 0 {
		variants = []string{c.GuestAppend}
	}
	for _, be := range c.Backends {
		for i, v := range variants {
			vc := c
			vc.GuestAppend = v
			if len(variants) > 1 {
				vc.consoleSuffix = fmt.Sprintf("-v%d", i)
			}
			r, err := selfTestBackend(ctx, vc, be, initrd, tmp)
			if r != nil {
				res.Backends = append(res.Backends, *r)
			}
			if err != nil {
				return res, fmt.Errorf("%s: %w", be, err)
			}
		}
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	return res, writeOut(c.OutDir, "selftest.json", b)
}

func selfTestBackend(ctx context.Context, c SelfTestConfig, backend, initrd, tmp string) (*SelfTestBackend, error) {
	vm, r, err := bootNestedVM(ctx, c, backend, initrd, tmp)
	if err != nil {
		return r, err
	}
	defer vm.Close()
	if c.BootOnly {
		return r, nil
	}
	tx0, drop0 := tapCounters(selfTestTap)
	t0 := time.Now()
	pr, err := pktgen.Flood{Dev: selfTestTap, Count: c.Count, Duration: c.Duration, Dst: "10.0.0.2", DstMAC: selfTestMAC}.Run(ctx)
	r.WindowS = time.Since(t0).Seconds()
	tx1, drop1 := tapCounters(selfTestTap)
	r.Packets, r.PPS, r.Errors, r.Stopped = pr.Packets, pr.PPS, pr.Errors, pr.Stopped
	select {
	case <-vm.Done():
		err = errors.Join(err, vm.BootError("nested guest", errors.New("qemu exited during pktgen")))
	default:
	}
	if tx1 >= tx0 && drop1 >= drop0 {
		r.TapTx, r.TapDropped = tx1-tx0, drop1-drop0
	}
	if r.WindowS > 0 {
		r.LostPPS = float64(r.TapDropped) / r.WindowS
	}
	fmt.Fprintf(c.Log, "selftest %s: pktgen %d packets, %.0f pps, %d errors; tap tx %d dropped %d\n",
		backend, r.Packets, r.PPS, r.Errors, r.TapTx, r.TapDropped)
	return r, err
}

func tapCounters(dev string) (tx, dropped uint64) {
	read := func(n string) uint64 {
		b, _ := os.ReadFile(filepath.Join("/sys/class/net", dev, "statistics", n))
		v, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return v
	}
	return read("tx_packets"), read("tx_dropped")
}

// bootNestedVM boots the nested guest on the self-test tap with backend's
// NIC and waits until its /init reports ready. The caller quits the VM
// (VM.Stop); on error it is gone.
func bootNestedVM(ctx context.Context, c SelfTestConfig, backend, initrd, tmp string) (*qemu.VM, *SelfTestBackend, error) {
	vhost := false
	switch backend {
	case "tap":
	case "tap+vhost":
		vhost = true
	default:
		return nil, nil, inputErrorf("unknown backend %q; use tap or tap+vhost", backend)
	}
	if c.BootTimeout == 0 {
		c.BootTimeout = 400 * time.Second
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	console, err := c.newConsole("nested-" + strings.ReplaceAll(backend, "+", "-") + c.consoleSuffix + "-console.log")
	if err != nil {
		return nil, nil, err
	}
	kernel := c.GuestKernel
	if v, err := vmimages.PVHKernel(ctx, c.GuestKernel, ""); err == nil {
		kernel = v // as the runner boots its guests
	}
	qc := qemu.Config{
		Name: "vnb-nested", Accel: qemu.TCG, CPUs: 1, MemoryMiB: 256,
		Kernel: kernel, Initrd: initrd,
		Append:     initCmdline(c.GuestAppend, ""),
		NICs:       []qemu.NIC{{Tap: selfTestTap, MAC: selfTestMAC, Vhost: vhost}},
		QMPSocket:  filepath.Join(tmp, "qmp.sock"),
		ConsoleLog: console,
	}
	start := time.Now()
	vm, err := qemu.Start(ctx, nil, proc.Real{}, qc, qemu.StartOptions{})
	if err != nil {
		return nil, nil, err
	}
	r := &SelfTestBackend{Backend: backend, Append: c.GuestAppend}
	fail := func(err error) (*qemu.VM, *SelfTestBackend, error) {
		vm.Close()
		return nil, r, err
	}
	if err := linkUp(selfTestTap); err != nil {
		return fail(err)
	}
	f := newFollower(vm.Console(), nil, "")
	defer f.close()
	deadline := time.After(c.BootTimeout)
	for ready := false; !ready; {
		for _, ev := range f.poll() {
			switch ev.Ev {
			case vmimages.EvInit:
				r.InitUptime = ev.Uptime
			case vmimages.EvModules:
				r.ModulesMs = ev.StepMS
			case vmimages.EvReady:
				ready = true
				r.ReadySeconds = ev.Uptime
			case vmimages.EvError:
				return fail(vm.BootError("nested guest", errors.New(ev.Msg)))
			}
		}
		if ready {
			break
		}
		select {
		case <-vm.Done():
			if ctx.Err() != nil {
				return fail(ctx.Err()) // the interrupt killed it
			}
			return fail(vm.BootError("nested guest", fmt.Errorf("qemu exited: %v", vm.Process().Wait())))
		case <-deadline:
			return fail(vm.BootError("nested guest", fmt.Errorf("not ready after %v", c.BootTimeout)))
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	r.BootSeconds = time.Since(start).Seconds()
	fmt.Fprintf(c.Log, "selftest %s: nested guest ready after %.1fs (guest uptime: /init %.1fs, ready %.1fs, modules %d ms)\n",
		backend, r.BootSeconds, r.InitUptime, r.ReadySeconds, r.ModulesMs)
	return vm, r, nil
}

// nestedInitrd builds the nested guest's initramfs into tmp.
func nestedInitrd(c SelfTestConfig, tmp string) (string, error) {
	initrd := filepath.Join(tmp, "guest.cpio")
	ir := Initramfs{Binary: c.Binary, Modules: c.GuestModules, Load: GuestModules, Config: InitConfig{Mode: "guest", Links: []string{"eth0"}}}
	_, err := ir.Build(initrd)
	return initrd, err
}

// writeOut writes the file name of the output directory dir through
// safefs (no link followed).
// newConsole makes the console log name in OutDir, the user's directory,
// for QEMU to write (it opens the log itself, truncating it). The log is
// a new file (O_EXCL): a file of that name that this invocation did not
// make is the user's, and is refused, never removed or overwritten. One
// this invocation made (a backend given twice) is truncated, through no
// link.
func (c SelfTestConfig) newConsole(name string) (string, error) {
	d, err := safefs.MkdirAll(c.OutDir)
	if err != nil {
		return "", err
	}
	defer d.Close()
	flag := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if c.consoles[name] {
		flag = os.O_WRONLY | os.O_TRUNC
	}
	f, err := d.OpenFile(name, flag, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return "", inputErrorf("%s exists and this run did not make it; vnetbench removes no file it did not make: remove it or give another -o", d.Join(name))
	}
	if err != nil {
		return "", err
	}
	if c.consoles != nil {
		c.consoles[name] = true
	}
	return d.Join(name), f.Close()
}

func writeOut(dir, name string, data []byte) error {
	d, err := safefs.MkdirAll(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteFile(name, data, 0o644)
}
