// Package labvm runs vnetbench inside a VM booted with the kernel under test
// ("lab mode"): a kernel image + modules directory, or a Debian kernel
// package version. The lab VM gets the host root filesystem read-only over
// 9p, tmpfs where writes are needed, the run directory (and the cache)
// read-write over 9p at the same paths, and an initramfs whose /init is the
// vnetbench binary itself in "lab-init" mode: it loads the kernel's
// modules, chroots into the host root and runs `vnetbench ARGS...` (the
// runner passes `run --inside-lab ...`), then powers off. Results thus land
// straight in the host's run directory.
//
// The host side (Run) follows the lab console for the protocol events
// (vmimages' console transport), applies a deadline per phase (boot,
// setup, run, shutdown), reports failures with the console tail and
// always shuts the VM down. Init is the guest side; SelfTest is a small in-lab pktgen check
// against a nested guest.
//
// labvm does not decide what runs inside (runner/lab, the lab
// orchestration, builds Args) and does not import package runner.
package labvm

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/ledger"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/vmimages"
)

// Kernel names the kernel under test.
type Kernel struct {
	Image   string // bzImage path
	Modules string // its /lib/modules/<release> directory ("" = derived)
	Debian  string // Debian kernel version, e.g. "6.1.0-47-amd64" (fetched with apt-get)
}

// Timeouts bound each phase of a lab VM; zero values take the defaults.
type Timeouts struct {
	Boot     time.Duration // QEMU start to /init running (default 120s)
	Setup    time.Duration // /init to the inner command started: modules, mounts (default 120s)
	Run      time.Duration // the inner command (default 60m)
	Shutdown time.Duration // inner exit to QEMU gone (default 30s)
	Silence  time.Duration // the longest the console may stay silent while the inner command runs (default SilenceLimit)
}

func (t Timeouts) withDefaults() Timeouts {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.Boot, 120*time.Second)
	def(&t.Setup, 120*time.Second)
	def(&t.Run, 60*time.Minute)
	def(&t.Shutdown, 30*time.Second)
	def(&t.Silence, SilenceLimit)
	return t
}

// Config is one lab VM run.
type Config struct {
	// Label is the kernel label (stock, patched, ...): names the lab's
	// directory RunDir/lab/LABEL and the VM.
	Label  string
	Kernel Kernel
	// RunDir is the host run directory, shared at the same path:
	// read-only when OutDir is set, else read-write.
	RunDir string
	// OutDir is the directory under RunDir the run inside writes (the
	// runner's: RunDir/lab/LABEL/run), shared read-write; "" = all of
	// RunDir is. The lab then cannot change what the host reads and
	// writes elsewhere in the run directory.
	OutDir string
	// Args is the vnetbench argv inside the lab, after the program name,
	// e.g. ["run", "--inside-lab", ...]. Paths must be visible in the lab:
	// under RunDir, the cache, or on the host root outside /tmp.
	Args []string
	// Env is added to the inner command's environment (KEY=VALUE), after
	// the lab's own PATH, HOME, TMPDIR, VNETBENCH_CACHE and VNETBENCH_LAB.
	// Nothing of the host's environment passes otherwise.
	Env []string
	// Binary is the vnetbench binary used as /init and inside (default:
	// this executable); a dynamically linked one brings its libraries.
	Binary string
	// CacheDir is shared read-only at the same path (default
	// vmimages.CacheDir()): the inner run finds fetched kernels there (the
	// host fetches them first: Prefetch), and the host builds kernels in
	// its kbuild directory as root. All of it is read-only, the images
	// the host built too (a kernel under test must not replace the image
	// the next run boots): the guest images the inner run builds go to
	// LabImageCache (vmimages.ImageCacheEnv), a tmpfs of the lab.
	CacheDir string
	// CPUs and MemoryMiB size the lab VM (defaults: the host's CPU count,
	// 2048 MiB; the runner sizes it from the scenario).
	CPUs, MemoryMiB int
	// PinVCPUs, when set, pins lab vCPU i to host CPU PinVCPUs[i] once
	// the VM runs, so a CPU number inside the lab (a pinned vhost worker,
	// kpktgend_N) stays one host CPU.
	PinVCPUs []int
	// Accel is "" (detect: KVM when usable, else TCG), "kvm" or "tcg".
	Accel qemu.Accel
	// Nested is the CPU's virtualization flag ("vmx", "svm") the lab VM
	// shows its guests (-cpu host,+FLAG) when the host nests KVM; "" =
	// none asked for.
	Nested string
	// NeedKVM refuses, before the VM boots, a lab kernel that lacks kvm or
	// the vendor module for Nested: cells that ask for guest.accel: kvm
	// could not run in it.
	NeedKVM bool
	// TCGThread is passed to qemu.Config (under TCG only).
	TCGThread string
	// QEMUExtra are extra QEMU arguments (e.g. a debug monitor).
	QEMUExtra []string
	// NoPerfKeys leaves the perf static keys to the run inside: lab init
	// does not hold them (InitConfig.PerfKeys). For the lockup
	// reproducer only.
	NoPerfKeys bool
	// DropReasons makes lab init attach the kernel's drop counter
	// (internal/dropmon) before the run inside starts, with every other
	// CPU offline, and pass it to that run (InitConfig.DropReasons).
	DropReasons bool
	// Append is added to the kernel command line (after
	// vmimages.TCGTuning under TCG, as for every kernel under TCG).
	Append string
	// Prefetch are kernels the inner run needs (e.g. the nested guest's
	// Debian kernel): resolved and fetched into the cache on the host
	// before the lab boots, because the lab VM has no network.
	Prefetch []Kernel
	// Shares are host directories the run inside needs that the host root
	// share may hide (under a tmpfs directory such as /root or /home, e.g. a
	// kernel tree holding samples/pktgen): shared read-only at the same
	// path. Directories under RunDir or CacheDir need no entry.
	Shares []string
	// Modules to load (nil = DefaultModules).
	Modules []string
	// Replace are module files (.ko) loaded in place of the kernel's
	// modules of the same name (a module build of runner/kbuild), and
	// loaded whether Modules names them or not; after loading, lab init
	// checks that each runs as built (srcversion, build ID), else the lab
	// fails in its setup. Result.Checked lists them.
	Replace  []string
	Timeouts Timeouts
	// Turns, when set, makes the lab measure in turn with the other labs
	// of its run (turn.go): the run inside announces it is ready to
	// measure and waits; the lab is paused until Turns grants the turn.
	// Nil: the lab measures at once (the run has one lab at a time).
	Turns Turns
	// Output receives the inner command's console output (nil = discarded;
	// it is always in RunDir/lab/LABEL/console.log).
	Output io.Writer
	// Exec starts QEMU (default proc.Real{}).
	Exec proc.Executor
}

// Result is what a lab run measured.
type Result struct {
	KernelRelease string
	Accel         qemu.Accel
	BootSeconds   float64 // QEMU start to /init running (host clock)
	SetupSeconds  float64 // /init to inner command started
	RunSeconds    float64 // inner command
	TotalSeconds  float64 // QEMU start to QEMU exit
	ModulesMs     int64   // module loading inside
	Missing       []string
	// KVM is the KVM vendor module the lab VM loaded for its nested
	// guests (kvm_intel, kvm_amd); "" under TCG or when it could not, with
	// the reason in NoKVM.
	KVM, NoKVM string
	// Checked are the Replace modules lab init found running as built.
	Checked  []string
	ExitCode int    // the inner command's exit status
	Console  string // console log path
	// PausedSeconds is how long the lab stood paused, waiting for its
	// turn to measure (Config.Turns; in RunSeconds too).
	PausedSeconds float64
}

// inputErrorf is a bad lab configuration (no kernel, missing files): an
// error of class fault.ErrInput.
func inputErrorf(format string, a ...any) error { return fault.Input("lab: "+format, a...) }

// Error is a lab VM that failed: which phase, why, and the console tail.
type Error struct {
	Label   string
	Phase   string // boot | setup | run | shutdown
	Err     error
	Console string // path of the full console log
	Tail    string // last console lines
}

func (e *Error) Error() string {
	s := fmt.Sprintf("lab %s: %s: %v", e.Label, e.Phase, e.Err)
	switch {
	case e.Tail != "":
		s += "\nlast console lines (" + e.Console + "):\n" + e.Tail
	case e.Console != "":
		s += " (console log " + e.Console + " is empty)"
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// InnerError is the inner command's non-zero exit. It is of class
// fault.ErrInput when the inner exit status is 2 (bad input or a missing
// capability inside), so the outer command exits 2 too; else it is a
// failure.
type InnerError struct {
	Label string
	Code  int
	Tail  string
}

func (e *InnerError) Error() string {
	return fmt.Sprintf("lab %s: inner vnetbench exited with status %d; last console lines:\n%s", e.Label, e.Code, e.Tail)
}

// Is passes a bad-input exit through (errors.Is(err, fault.ErrInput)).
func (e *InnerError) Is(target error) bool { return e.Code == 2 && target == fault.ErrInput }

// ResolveKernel returns the image, modules directory and release of k,
// fetching a Debian package into cacheDir when k.Debian is set.
func ResolveKernel(ctx context.Context, k Kernel, cacheDir string) (*vmimages.Kernel, error) {
	switch {
	case k.Debian != "":
		v, err := debianLabVersion(ctx, k.Debian, cacheDir)
		if err != nil {
			return nil, err
		}
		return vmimages.FetchDebianKernel(ctx, v, cacheDir)
	case k.Image != "":
		return vmimages.FindKernel(ctx, k.Image, k.Modules, cacheDir)
	}
	return nil, inputErrorf("kernel has neither image nor debian version; set image: (and modules:) or debian: in kernels:")
}

// CheckKernel refuses what ResolveKernel would refuse before fetching
// anything, without fetching: a kernel given as files that is no bzImage
// and modules directory (vmimages.FindKernel), a Debian version of a
// form the lab cannot boot or a series no package of which is cached or
// known to apt (debianLabVersion; apt-cache reads the local package
// lists, not the network). A Debian ABI that is well formed passes
// unchecked: only its fetch can tell that Debian has no such package.
func CheckKernel(ctx context.Context, k Kernel, cacheDir string) error {
	if k.Debian != "" {
		_, err := debianLabVersion(ctx, k.Debian, cacheDir)
		return err
	}
	_, err := ResolveKernel(ctx, k, cacheDir)
	return err
}

// LocalKernel resolves k as ResolveKernel does but never downloads: a
// Debian package must be unpacked in cacheDir already (else the error wraps
// vmimages.ErrNotFetched). For checks such as doctor's.
func LocalKernel(ctx context.Context, k Kernel, cacheDir string) (*vmimages.Kernel, error) {
	if k.Debian != "" {
		v, err := debianLabVersion(ctx, k.Debian, cacheDir)
		if err != nil {
			return nil, err
		}
		return vmimages.CachedDebianKernel(ctx, v, cacheDir)
	}
	return ResolveKernel(ctx, k, cacheDir)
}

// InitCommand is what a lab init VM's kernel passes to its /init after
// "--": the vnetbench command /init runs (cmd's lab-init), which tells it
// from the guest agent.
const InitCommand = "lab-init"

// initCmdline is the kernel command line of a VM whose /init is lab init
// (a lab VM, the self-test's nested guest), composed as every VM's is
// (vmimages.KernelCmdline): the console kept to warnings (LogWarnings),
// /init named, tuning (vmimages.TCGTuning under TCG: no IO-APIC timer
// check, which under a loaded emulator stalled a nested boot for over
// 400 s; no speculative-execution mitigations, whose page-table isolation
// makes every kernel entry flush the emulated TLB), extra, then
// InitCommand after "--". Measured on a loaded 2-core machine with
// Debian's 6.1 cloud kernel under TCG: the nested guest's /init at 3.5-3.8 s
// guest uptime with the TCG tuning instead of 4.1-6.2 s without; nested
// (TCG in TCG) the boot stays at 4-6 minutes, dominated by the double
// emulation and the host's load, not by these parameters.
func initCmdline(tuning, extra string) string {
	return vmimages.KernelCmdline{
		Verbosity: vmimages.LogWarnings, Init: "/init", Tuning: tuning,
		Extra: []string{extra}, Args: []string{InitCommand},
	}.String()
}

// LabImageCache is where the run inside a lab writes the guest images it
// builds (a tmpfs: the host's cache is read-only there).
const LabImageCache = "/tmp/vnetbench-images"

// tmpfsDirs are the host root directories a lab makes writable.
var tmpfsDirs = []string{"/tmp", "/run", "/var/tmp", "/var/log", "/var/cache", "/var/lib", "/root", "/home", "/mnt", "/media", "/srv"}

// Run boots the lab VM for c, runs c.Args inside and waits for it to power
// off. The VM is always shut down; a failure says which phase failed and
// shows the console tail.
func Run(ctx context.Context, c Config) (*Result, error) {
	runDir, err := c.prepare()
	if err != nil {
		return nil, err
	}
	k, err := c.labKernel(ctx)
	if err != nil {
		return nil, err
	}
	tmp, removeTmp, err := c.makeDirs(runDir)
	if err != nil {
		return nil, err
	}
	defer removeTmp()
	defer c.removeTurn(runDir)
	qc, res, err := c.bootConfig(ctx, k, runDir, tmp)
	if err != nil {
		return nil, err
	}
	if err := c.boot(ctx, qc, res, runDir); err != nil {
		return res, err
	}
	return res, nil
}

// prepare checks c and fills in its defaults; it returns the absolute
// run directory.
func (c *Config) prepare() (string, error) {
	if c.Label == "" || strings.ContainsAny(c.Label, "/ \t\n") {
		return "", inputErrorf("invalid kernel label %q; use a word like stock or patched", c.Label)
	}
	if c.RunDir == "" {
		return "", inputErrorf("no run directory")
	}
	for _, e := range c.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return "", inputErrorf("environment entry %q: want KEY=VALUE", e)
		}
	}
	runDir, err := filepath.Abs(c.RunDir)
	if err != nil {
		return "", err
	}
	if c.OutDir != "" {
		if c.OutDir, err = filepath.Abs(c.OutDir); err != nil {
			return "", err
		}
	}
	if c.CacheDir == "" {
		c.CacheDir = vmimages.CacheDir()
	}
	if c.Binary == "" {
		if c.Binary, err = os.Executable(); err != nil {
			return "", err
		}
	}
	if c.Exec == nil {
		c.Exec = proc.Real{}
	}
	if err := checkBinary(c.Binary); err != nil {
		return "", err
	}
	return runDir, nil
}

// labKernel resolves the lab's kernel, fetches the kernels the run
// inside needs (c.Prefetch) and checks the lab kernel's modules.
func (c *Config) labKernel(ctx context.Context) (*vmimages.Kernel, error) {
	k, err := ResolveKernel(ctx, c.Kernel, c.CacheDir)
	if err != nil {
		return nil, err
	}
	for _, pk := range c.Prefetch {
		if pk.Debian == "" {
			continue // an image on the host is visible in the lab as it is
		}
		gk, err := vmimages.FetchDebianKernel(ctx, pk.Debian, c.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("lab %s: fetch kernel %s for the run inside (the lab VM has no network): %w", c.Label, pk.Debian, err)
		}
		// Its vmlinux too, for a PVH boot inside: extracting it here is
		// seconds, under TCG in the lab a minute. A kernel that cannot be
		// booted that way boots as a bzImage inside.
		vmimages.PVHKernel(ctx, gk.Image, c.CacheDir)
	}
	if k.Modules == "" {
		return nil, inputErrorf("kernel %s has no modules directory; set modules: to its /lib/modules/<release>", k.Image)
	}
	if c.NeedKVM {
		if err := checkKVMModules(k, c.Nested); err != nil {
			return nil, fmt.Errorf("lab %s: %w", c.Label, err)
		}
	}
	return k, nil
}

// makeDirs creates the lab's directory under runDir and the cache, and
// returns a new temporary directory for the initramfs and QMP socket.
func (c *Config) makeDirs(runDir string) (tmp string, remove func() error, err error) {
	run, err := safefs.MkdirAll(runDir)
	if err != nil {
		return "", nil, err
	}
	defer run.Close()
	// QEMU writes the console log there, a new file: the one an earlier
	// boot of this lab left in the run directory (vnetbench's own) is
	// removed (a link at the name too, not followed); a link on the way
	// is refused.
	if err := run.MkdirAll(results.LabVMDir(c.Label)); err != nil {
		return "", nil, err
	}
	if err := safefs.RemoveOwn(run, results.LabConsole(c.Label)); err != nil {
		return "", nil, err
	}
	if c.OutDir != "" {
		if !within(c.OutDir, runDir) {
			return "", nil, inputErrorf("lab %s: output %s is not under the run directory %s", c.Label, c.OutDir, runDir)
		}
		rel, _ := filepath.Rel(runDir, c.OutDir)
		if err := run.MkdirAll(rel); err != nil {
			return "", nil, err
		}
	}
	// A turn file left by an earlier lab of this label (a lab booted
	// again, --resume) would let the run inside measure at once.
	if err := c.removeTurn(runDir); err != nil {
		return "", nil, err
	}
	return ledger.MkdirTemp(fmt.Sprintf("vnb-lab-%d", os.Getpid()))
}

// bootConfig builds the lab's initramfs in tmp and returns the QEMU
// configuration that boots it and the Result to fill.
func (c *Config) bootConfig(ctx context.Context, k *vmimages.Kernel, runDir, tmp string) (qemu.Config, *Result, error) {
	shares, qshares, err := c.shares(runDir)
	if err != nil {
		return qemu.Config{}, nil, err
	}
	accel := c.Accel
	if accel == "" {
		accel, _ = qemu.DetectAccel()
	}
	initrd := filepath.Join(tmp, "initramfs.cpio")
	missing, err := c.buildInitramfs(k, runDir, initrd, accel, shares)
	if err != nil {
		return qemu.Config{}, nil, err
	}
	console := filepath.Join(runDir, results.LabConsole(c.Label)) // emptied by makeDirs
	// Boot the uncompressed kernel at its PVH entry when it has one: no
	// firmware loading and no decompression under TCG (vmimages.PVHKernel).
	bootImage := k.Image
	if v, err := vmimages.PVHKernel(ctx, k.Image, c.CacheDir); err == nil {
		bootImage = v
	} else if c.Output != nil {
		fmt.Fprintf(c.Output, "[lab %s] booting the bzImage: %v\n", c.Label, err)
	}
	qc := c.vm(bootImage, initrd, filepath.Join(tmp, "qmp.sock"), console, accel, qshares)
	return qc, &Result{KernelRelease: k.Release, Accel: accel, Console: console, Missing: missing}, nil
}

// buildInitramfs writes the lab's initramfs to initrd: /init runs lab
// init with c's modules, shares and inner command. It returns the modules
// it did not find, and refuses a kernel without 9p over virtio.
func (c *Config) buildInitramfs(k *vmimages.Kernel, runDir, initrd string, accel qemu.Accel, shares []InitShare) ([]string, error) {
	mods := c.Modules
	if mods == nil {
		mods = DefaultModules()
	}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
		"TMPDIR=/tmp", "VNETBENCH_CACHE=" + c.CacheDir, vmimages.ImageCacheEnv + "=" + LabImageCache, "VNETBENCH_LAB=" + c.Label}
	if k.Modules != "" {
		// perf report in the run inside finds the loaded modules' symbols
		// there (runner.ModulesEnvVar; labvm imports no runner).
		env = append(env, "VNETBENCH_LAB_MODULES="+k.Modules)
	}
	if c.Turns != nil {
		env = append(env, TurnEnv+"="+filepath.Join(c.turnDir(runDir), TurnFile))
	}
	env = append(env, c.Env...)
	// KVM only in a lab under KVM: under TCG the lab's CPU shows no SVM
	// (qemu.Config.NoSVM), and its nested guests run under TCG.
	ir := Initramfs{Binary: c.Binary, Modules: k.Modules, Load: mods, KVM: accel == qemu.KVM, Replace: c.Replace, Config: InitConfig{
		Mode: "lab", RootTag: "hostroot", Shares: shares, Tmpfs: tmpfsDirs, Args: c.Args, Env: env, Dir: runDir, PerfKeys: !c.NoPerfKeys,
		DropReasons: c.DropReasons,
	}}
	icfg, err := ir.Build(initrd)
	if err != nil {
		return nil, err
	}
	for _, m := range icfg.Missing {
		if m == "9p" || m == "9pnet_virtio" || m == "virtio_pci" {
			return nil, inputErrorf("kernel %s has no %s (neither a module in %s nor built in): a lab VM mounts the host root over virtio-9p; enable CONFIG_NET_9P_VIRTIO, CONFIG_9P_FS and CONFIG_VIRTIO_PCI (y or m)", k.Image, m, k.Modules)
		}
	}
	return icfg.Missing, nil
}

// timeoutHint says what to do about a lab phase that overran: a scenario
// key where one bounds the phase (timeouts.boot; the run's deadline is
// the sum of its cells' timeouts), else where to look.
func timeoutHint(phase string) string {
	switch phase {
	case "boot":
		return "raise timeouts.boot if the machine is slow"
	case "run":
		return "the run's deadline is the sum of its cells' timeouts.cell (boot + setup + traffic + teardown) plus a margin: raise timeouts.traffic or timeouts.cell if the cells need longer"
	case "setup":
		return "loading modules and mounting the host root took too long: the lab kernel may be stuck, see the console log"
	}
	return "the lab VM did not power off after its run: its kernel may be stuck, see the console log"
}

// shares are the lab's 9p shares (shareList) for the lab's init and for
// QEMU; each of c.Shares must be a host directory.
func (c Config) shares(runDir string) ([]InitShare, []qemu.Share, error) {
	for _, dir := range c.Shares {
		if within(dir, runDir) || within(dir, c.CacheDir) {
			continue
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, nil, inputErrorf("lab %s: %s is not a directory on the host; the run inside needs it (fix the scenario's path)", c.Label, dir)
		}
	}
	qshares := c.shareList(runDir)
	var shares []InitShare
	for _, s := range qshares[1:] { // the host root is the init's RootTag
		shares = append(shares, InitShare{Tag: s.Tag, Path: s.Path, ReadOnly: s.ReadOnly})
	}
	return shares, qshares, nil
}

// shareList is what a lab VM sees of the host, in mount order: the host
// root read-only; the run directory (read-only when c.OutDir is set, with
// c.OutDir read-write on top); the cache read-only, its images too (the
// host runs make in its kbuild trees as root, unpacks kernels and boots
// the images there); and c.Shares read-only (those under the run
// directory or the cache are there already). Pure: PlanArgs prints it.
func (c Config) shareList(runDir string) []qemu.Share {
	out := []qemu.Share{{Tag: "hostroot", Path: "/", ReadOnly: true}, {Tag: "vnbrun", Path: runDir, ReadOnly: c.OutDir != ""}}
	if c.OutDir != "" {
		out = append(out, qemu.Share{Tag: "vnbout", Path: c.OutDir})
	}
	if !within(runDir, c.CacheDir) && !within(c.CacheDir, runDir) {
		out = append(out, qemu.Share{Tag: "vnbcache", Path: c.CacheDir, ReadOnly: true})
	}
	for i, dir := range c.Shares {
		if !within(dir, runDir) && !within(dir, c.CacheDir) {
			out = append(out, qemu.Share{Tag: fmt.Sprintf("vnbx%d", i), Path: dir, ReadOnly: true})
		}
	}
	return out
}

// vm is the lab VM's QEMU configuration: c's size (defaults: the host's
// CPU count, 2048 MiB), accelerator and nesting flag, the kernel image and
// initramfs, and the shares. Pure: Run starts it, PlanArgs prints it.
func (c Config) vm(image, initrd, qmp, console string, accel qemu.Accel, shares []qemu.Share) qemu.Config {
	cpus := c.CPUs
	if cpus <= 0 {
		cpus = runtime.NumCPU()
	}
	mem := c.MemoryMiB
	if mem <= 0 {
		mem = 2048
	}
	nested, tuning := "", vmimages.TCGTuning
	if accel == qemu.KVM {
		nested, tuning = c.Nested, ""
	}
	return qemu.Config{
		Name: "vnb-lab-" + c.Label, Accel: accel, TCGThread: c.TCGThread, CPUs: cpus, MemoryMiB: mem, Nested: nested, NoSVM: accel != qemu.KVM,
		Kernel: image, Initrd: initrd,
		Append:    initCmdline(tuning, c.Append),
		Shares:    shares,
		QMPSocket: qmp, ConsoleLog: console, Extra: c.QEMUExtra,
	}
}

// PlanArgs is the lab VM's QEMU argv for c under accel, as plan shows it:
// placeholders for what exists only at run time (LAB_KERNEL: the image of
// c.Kernel; TMP: the lab's temporary directory with its initramfs;
// RUN_DIR; CACHE_DIR unless c.CacheDir is set). c.Accel, when set, wins
// over accel.
func PlanArgs(c Config, accel qemu.Accel) []string {
	if c.Accel != "" {
		accel = c.Accel
	}
	if c.RunDir == "" {
		c.RunDir = "RUN_DIR"
		if c.OutDir != "" && !filepath.IsAbs(c.OutDir) {
			c.OutDir = filepath.Join(c.RunDir, c.OutDir)
		}
	}
	if c.CacheDir == "" {
		c.CacheDir = "CACHE_DIR"
	}
	image := c.Kernel.Image
	if image == "" {
		image = "LAB_KERNEL"
	}
	qshares := c.shareList(c.RunDir)
	qc := c.vm(image, "TMP/initramfs.cpio", "TMP/qmp.sock", filepath.Join(c.RunDir, results.LabConsole(c.Label)), accel, qshares)
	return qemu.Args(qc)
}

// checkKVMModules refuses a lab kernel that lacks kvm or the vendor
// module for flag ("vmx", "svm").
func checkKVMModules(k *vmimages.Kernel, flag string) error {
	vendor := map[string]string{"vmx": KVMIntelModule, "svm": KVMAMDModule}[flag]
	if vendor == "" {
		return fault.Capability("cells ask for guest.accel: kvm but this host's CPU shows no vmx/svm for the lab VM; use accel: auto or tcg")
	}
	missing, err := MissingKVMModules(k.Modules, vendor)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fault.Capability("cells ask for guest.accel: kvm but lab kernel %s (%s) lacks %s, which lab init loads for its guests' KVM; build it with CONFIG_KVM and CONFIG_%s (=m or =y), or use accel: auto or tcg",
			k.Release, k.Image, strings.Join(missing, " and "), strings.ToUpper(vendor))
	}
	return nil
}

// checkBinary refuses, before anything boots, a binary that cannot be a
// VM's /init: not an ELF executable, or dynamically linked against a
// library the loader would not find. A dynamically linked one (go build or
// go install with cgo on) is fine: the initramfs carries its libraries.
func checkBinary(path string) error {
	if _, err := vmimages.SharedLibs(path); err != nil {
		return inputErrorf("vnetbench binary %s cannot run as a VM's /init: %v; pass the vnetbench binary (make build, or go install ./cmd/vnetbench)", path, err)
	}
	return nil
}

func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// follower tails the console log (a qemu.ConsoleWatch, which notes the
// kernel's faults), returns protocol events and forwards the other lines
// to out.
type follower struct {
	watch *qemu.ConsoleWatch
	out   io.Writer
	label string
	// seen is when the console last grew.
	seen time.Time
}

// newFollower follows the console that w watches (qemu.VM.Console).
func newFollower(w *qemu.ConsoleWatch, out io.Writer, label string) *follower {
	return &follower{watch: w, out: out, label: label, seen: time.Now()}
}

func (f *follower) poll() []vmimages.Event {
	var evs []vmimages.Event
	off := f.watch.Offset()
	lines := f.watch.Poll()
	if f.watch.Offset() != off {
		f.seen = time.Now()
	}
	for _, line := range lines {
		if ev, ok := vmimages.ParseConsoleEvent(line); ok {
			evs = append(evs, ev)
			continue
		}
		if f.out != nil && line != "" {
			fmt.Fprintf(f.out, "[lab %s] %s\n", f.label, line)
		}
	}
	return evs
}

// fault is the first console line by which the kernel reported a lockup,
// stall or crash, and when it was seen ("" = none yet).
func (f *follower) fault() (string, time.Time) { return f.watch.Fault, f.watch.FaultAt }

func (f *follower) close() { f.watch.Close() }
