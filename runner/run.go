package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/ledger"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/perfkeys"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/runner/undo"
	"github.com/vnetbench/vnetbench/scenarios"
)

// Options configure Run.
type Options struct {
	// Dir is the run directory (created; with Resume, reopened).
	Dir string
	// ChosenBase, when set, is the user's part of Dir, which vnetbench
	// chose under it (runs/NAME under the working directory, no -o):
	// the rest is made following no link (results.CreateChosen).
	ChosenBase string
	// Resume continues Dir, skipping samples it already holds.
	Resume bool
	// Scenario and Seed are recorded in env.json and reproduce.sh.
	Scenario string
	Seed     int64
	// Sets are the scenario overrides (--set KEY=VALUE), recorded in
	// env.json and reproduce.sh.
	Sets []string
	// Command is the vnetbench command line that makes the run again
	// (without -o), recorded in env.json for a report's reproduce line:
	// a lab run's kernels and per-patch columns are in it, not in Sets.
	Command []string
	// Version is vnetbench's version for env.json.
	Version string
	// Exec runs programs (default proc.Real{}).
	Exec proc.Executor
	// Image returns the guest image (required unless every cell is
	// skipped).
	Image ImageFunc
	// DialAgent connects to the guest agent (default DialVMImagesAgent).
	DialAgent AgentDialer
	// NewGenerator makes a cell's generator (default NewGenerator: the
	// cell's workload's).
	NewGenerator func(*scenarios.Cell) (workload.Generator, error)
	// LockPath is the host lock (default DefaultLockPath).
	LockPath string
	// LockWait is how long to wait for another run's lock (0 = fail at
	// once with a *BusyError).
	LockWait time.Duration
	// Started, when set, is called once the checks have passed and the
	// host lock is held, before the run directory is written (the CLI
	// prints the run directory then, not for a refused run).
	Started func()
	// Progress is called after every sample (or skip).
	Progress func(Progress)
	// Log receives one line per notable event (nil = discarded).
	Log io.Writer
	// Accel forces the accelerator of every guest ("" = each cell's
	// guest.accel, resolved with KVM).
	Accel qemu.Accel
	// KVM is the host's KVM probe (nil = qemu.ProbeKVM(): a test vCPU run
	// on /dev/kvm). Tests describe other hosts with it.
	KVM *qemu.KVMStatus
	// Proc is where the runner finds threads (vhost workers, kernel
	// threads such as kpktgend_N); the zero value is this machine's /proc.
	Proc proc.FS
	// Shard is "I/N" when the run is one shard of a scenario (run
	// --shard), ShardSource where it came from (--shard auto's variables);
	// env.json keeps both (ExtraShard, ExtraShardSource) for merge.
	Shard, ShardSource string
	// SeedSource is where Seed came from (ResolveSeed); env.json keeps it
	// (ExtraSeedSource).
	SeedSource string
	// Turn, when set, is called once, right before the run's first
	// measurement: its first guest is up and that sample's host knobs
	// are set; its latency probe, warmup and window follow. The run
	// inside a lab waits there for its turn to measure (labvm.AwaitTurn)
	// while the other labs of its run boot. Its error fails the sample.
	Turn func(ctx context.Context) error
	// GuestStates, when set, lets a TCG guest start from a saved state
	// instead of booting, and saves the state of each one booted
	// (gueststate.go; the run inside a lab, GuestStatesEnv).
	GuestStates *GuestStates
}

// env.json Extra keys of a shard's run directory.
const (
	ExtraShard       = "shard"
	ExtraShardSource = "shard_source"
)

// NewEnv is env.json of a new run directory: this host's environment
// (CollectEnv; accel is the run's accelerator, "" when its guests run in
// lab VMs), a new run id, and o's scenario, seed, version, sets and shard.
func (o *Options) NewEnv(ctx context.Context, accel qemu.Accel) results.Env {
	env := CollectEnv(ctx, o.Exec, accel)
	env.Run, env.Scenario, env.Seed, env.Version, env.Set = newID(), o.Scenario, o.Seed, o.Version, o.Sets
	env.Command = o.Command
	o.markShard(&env)
	if o.SeedSource != "" {
		env.SetExtra(ExtraSeedSource, o.SeedSource)
	}
	return env
}

func (o *Options) markShard(env *results.Env) {
	if o.Shard == "" {
		return
	}
	env.SetExtra(ExtraShard, o.Shard)
	if o.ShardSource != "" {
		env.SetExtra(ExtraShardSource, o.ShardSource)
	}
}

// Progress reports one finished (or skipped) sample.
type Progress struct {
	Done, Total int
	Cell        string
	Kernel      string
	Rep         int
	Skipped     bool
	Sample      *results.Sample
	// Started marks the report sent once the host lock is held, before
	// the first sample (time spent waiting for the lock is not work).
	Started bool
	// Failed is the error of a sample that failed and was recorded as
	// failed (a guest kernel fault); the run goes on.
	Failed error
}

// Summary is what Run did.
type Summary struct {
	Dir      string
	RunID    string
	Samples  int        // appended in this invocation
	Skipped  int        // already in the run directory (--resume)
	Accel    qemu.Accel // the cells' accelerator ("kvm+tcg" when they differ)
	Netns    string     // the run's network namespace (deleted at the end)
	Warnings []string
}

// runState is one Run's live state.
type runState struct {
	opts    Options
	id      string
	dir     string
	exec    proc.Executor
	w       *results.Writer
	ns      *hostnet.Netns
	sockDir string
	kvm     qemu.KVMStatus // the host's KVM probe
	guests  *guests        // the guest phase: the running guest, booting one
	// kthreads tells the run's namespace's kernel threads from the
	// others (snapshotted in setupRun).
	kthreads    netnsThreads
	undo        *undo.Stack  // run-level teardown (netns, sockets)
	repro       *reproducer  // reproduce.sh
	drops       *dropCounter // cells with drop_reasons (nil: none)
	modSymsOnce sync.Once    // moduleSymbols
	turn        turnGate     // Options.Turn, before the first measurement
}

// turnGate calls a run's Options.Turn once, before its first measurement.
type turnGate struct {
	f    func(context.Context) error
	done bool
}

// wait calls f the first time; it reports whether it did.
func (g *turnGate) wait(ctx context.Context) (bool, error) {
	if g.f == nil || g.done {
		return false, nil
	}
	g.done = true
	return true, g.f(ctx)
}

// Run runs the cells (in the given order, one sample each; see
// scenarios.Order) and appends a sample per cell to the run directory.
// Capability problems are reported before anything is set up. Teardown
// runs on every exit path, also when ctx is cancelled (SIGINT); samples
// already appended stay.
func Run(ctx context.Context, cells []scenarios.Cell, o Options) (sum *Summary, err error) {
	o.setDefaults()
	if err := CheckRunDir(o.Dir, o.Resume); err != nil {
		return nil, err
	}
	kvm := o.kvmStatus()
	accel, accelWarnings, err := CellAccels(cells, kvm, o.Accel)
	if err != nil {
		return nil, err
	}
	if err := Preflight(ctx, cells, o.Exec); err != nil {
		return nil, err
	}
	if len(cells) > 0 { // a shard without cells measures nothing: it need not wait
		lock, err := AcquireLockWait(ctx, o.LockPath, o.LockWait)
		if err != nil {
			return nil, err
		}
		defer lock.Release()
	}
	if o.Started != nil {
		o.Started()
	}

	r := newRunState(o, cells, kvm)
	if o.Image == nil {
		return nil, errors.New("run: no guest image builder (Options.Image)")
	}
	sum = &Summary{Dir: o.Dir, Accel: accel, Warnings: accelWarnings}
	for _, w := range accelWarnings {
		r.logf("warning: %s", w)
	}
	if err := r.openResults(ctx, accel, sum); err != nil {
		return nil, err
	}
	defer r.w.Close()
	sum.RunID = r.id
	release := r.holdPerfKeys(cells)
	defer release()
	r.drops = openDrops(cells)
	defer r.drops.close()

	// Everything below is undone by r.undo, whatever happens.
	defer func() {
		if terr := r.teardownAll(); terr != nil {
			err = errors.Join(err, fmt.Errorf("teardown: %w (%s)", terr, LeftoversHint))
		}
		r.writeReproduce()
	}()

	faults, err := r.runCells(ctx, cells, sum)
	if err == nil && len(faults) > 0 {
		err = &KernelFaultError{Failed: faults, Of: len(cells)}
	}
	return sum, err
}

// setDefaults fills in the defaults of the unset options.
func (o *Options) setDefaults() {
	if o.Exec == nil {
		o.Exec = proc.Real{}
	}
	if o.DialAgent == nil {
		o.DialAgent = DialVMImagesAgent
	}
	if o.NewGenerator == nil {
		o.NewGenerator = NewGenerator
	}
	if o.LockPath == "" {
		o.LockPath = DefaultLockPath
	}
}

// kvmStatus is o.KVM, or else the host's KVM probe.
func (o *Options) kvmStatus() qemu.KVMStatus {
	if o.KVM != nil {
		return *o.KVM
	}
	return qemu.ProbeKVM()
}

// newRunState returns the state of a run of cells with options o.
func newRunState(o Options, cells []scenarios.Cell, kvm qemu.KVMStatus) *runState {
	r := &runState{opts: o, kvm: kvm, undo: undo.New(), dir: o.Dir, repro: &reproducer{}, turn: turnGate{f: o.Turn}}
	r.exec = &recordingExec{inner: o.Exec, rec: r.repro.argv}
	needs := NeedsOf(cells)
	r.guests = &guests{r: r, notes: envNotes{dir: r.dir}, contents: GuestContents{Programs: needs.GuestPrograms, Modules: needs.GuestModules}, paired: pairedGuests(cells)}
	return r
}

// openResults opens the run directory (Resume) or creates it with the
// host's environment, and sets the run's id.
func (r *runState) openResults(ctx context.Context, accel qemu.Accel, sum *Summary) error {
	o := &r.opts
	var err error
	if o.Resume {
		r.w, err = results.Open(o.Dir)
		if err == nil {
			sum.Warnings = append(sum.Warnings, r.w.Warnings()...)
			if env, eerr := results.ReadEnv(o.Dir); eerr == nil && env.Run != "" {
				r.id = env.Run // samples of a resumed run keep its id
			}
		}
	} else {
		env := o.NewEnv(ctx, accel)
		r.id = env.Run
		r.w, err = o.CreateDir(env)
	}
	if err != nil {
		return err
	}
	if r.id == "" {
		r.id = newID()
	}
	return nil
}

// holdPerfKeys holds the kernel's perf static keys on when a cell uses
// perf, and returns what releases them.
//
// perf sessions start and stop with every window. Holding the
// kernel's perf static keys on for the whole run keeps them from
// making the kernel live-patch its scheduler each time: under TCG
// (a lab VM) that patching can lock the kernel up (see perfkeys).
// The keys go on here, before any guest or traffic runs, and off
// after the teardown. (In a lab VM, lab init holds them for the
// lab's whole life: they never flip while anything runs there.)
func (r *runState) holdPerfKeys(cells []scenarios.Cell) (release func()) {
	if !usesPerf(cells) {
		return func() {}
	}
	keys, kerr := perfkeys.Hold()
	if kerr != nil {
		r.logf("warning: %v (perf sessions may then make the kernel patch its code while traffic runs)", kerr)
	}
	return keys.Release
}

func (r *runState) logf(format string, a ...any) {
	if r.opts.Log != nil {
		fmt.Fprintf(r.opts.Log, format+"\n", a...)
	}
}

func usesPerf(cells []scenarios.Cell) bool {
	for i := range cells {
		if cells[i].Perf.Stat != nil || cells[i].Perf.Record != nil {
			return true
		}
	}
	return false
}

func newID() string {
	var b [4]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// setupRun creates the run's network namespace and socket directory.
func (r *runState) setupRun(ctx context.Context) error {
	// Everything the run makes on the host is in the process's ledger
	// first: doctor tells a killed run's leftovers by it, not by name.
	ledger.SetRun(r.id)
	sockDir, removeSockDir, err := ledger.MkdirTemp(fmt.Sprintf("vnb-%d", os.Getpid()))
	if err != nil {
		return err
	}
	r.sockDir = sockDir
	r.undo.Push("remove "+sockDir, func(context.Context) error { return removeSockDir() })
	name := fmt.Sprintf("vnb-%d-%s", os.Getpid(), strings.ReplaceAll(r.id[len(r.id)-8:], "-", ""))
	// Per-namespace kernel threads (pktgen's kpktgend_N) of the run's
	// namespace are those that appear with it: remember the ones before.
	r.kthreads = snapshotKernelThreads(r.opts.Proc)
	r.repro.argv([]string{"ip", "netns", "add", name})
	ns, err := hostnet.CreateNetns(name)
	if err != nil {
		return err
	}
	r.ns = ns
	r.undo.Push("delete netns "+name, func(context.Context) error { return ns.Delete() })
	return nil
}

// teardownAll stops the guest and removes the namespace.
func (r *runState) teardownAll() error {
	var errs []error
	if r.guests != nil {
		if err := r.guests.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := r.undo.Run(30 * time.Second); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// writeReproduce writes reproduce.sh; a failure is a warning.
func (r *runState) writeReproduce() {
	if err := r.repro.write(r.dir, r.id, &r.opts); err != nil {
		r.logf("warning: reproduce.sh not written: %v", err)
	}
}

// CreateDir creates the run directory Dir with env (results.Create),
// its chosen part following no link when ChosenBase is set.
func (o *Options) CreateDir(env results.Env) (*results.Writer, error) {
	if o.ChosenBase == "" {
		return results.Create(o.Dir, env)
	}
	rel, err := filepath.Rel(o.ChosenBase, o.Dir)
	if err != nil || !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("run: run directory %s is not under %s", o.Dir, o.ChosenBase)
	}
	return results.CreateChosen(o.ChosenBase, rel, env)
}

// CheckRunDir refuses an empty or relative run directory: cmd makes every
// path absolute where it parses it, so the tools a cell starts in other
// working directories (trafgen in a temporary directory, the run inside a
// lab VM) see the same files. It also refuses, as bad input, a directory
// the run could not create or resume (results.CheckDir): before the
// host lock, the kernel builds and the lab VMs, not after them.
func CheckRunDir(dir string, resume bool) error {
	switch {
	case dir == "":
		return errors.New("run: no run directory")
	case !filepath.IsAbs(dir):
		return fmt.Errorf("run: run directory %q is relative; pass an absolute path", dir)
	}
	return results.CheckDir(dir, resume)
}
