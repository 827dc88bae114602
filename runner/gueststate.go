package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/runner/undo"
)

// Saved guest states. A guest nested under TCG in a lab VM boots for a
// minute and a half or more; the guests of a run's labs are the same VM
// (same QEMU, kernel, initramfs, command line and devices), so the first
// lab saves its guest's state once the agent is ready and the next lab
// starts its guest from that state in seconds instead of booting it. The
// state is QEMU's migration stream (qemu.SaveState); it is taken
// before the guest's first cell is set up (its sink, its workload's
// server), so a restored guest is where a booted one is when its agent
// says ready. Only TCG guests: under KVM a guest boots in seconds.

// GuestStatesEnv names the directory a run looks for saved guest states
// in (set by the lab for the run inside; a developer may set it for a
// host run). A run with it set also saves the state of each guest it
// boots, under its run directory's GuestStateDir, for the lab to keep.
const GuestStatesEnv = "VNETBENCH_GUEST_STATES"

// Sample labels of a guest started from a saved state: how long its
// start took (in place of boot_s) and the state's key.
const (
	LabelRestoreS   = "restore_s"
	LabelGuestState = "guest_state"
)

// GuestStateDir is where a run saves its guests' states, under its run
// directory: one file per state, named by its key.
const GuestStateDir = "guest-state"

// GuestStates are where a run finds saved guest states and where it saves
// them.
type GuestStates struct {
	// Dirs are searched for a state named by its key, in order.
	Dirs []string
	// Save saves each booted guest's state in the run directory's
	// GuestStateDir (made without following a link).
	Save bool
}

// find returns the saved state of key, or "".
func (st *GuestStates) find(key string) string {
	for _, d := range st.Dirs {
		p := filepath.Join(d, key)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
			return p
		}
	}
	return ""
}

// hexName matches the content-addressed names vmimages gives its images:
// initramfs-HASH.cpio, and the HASH directory of a vmlinux.
var hexName = lazyre.New(`^(initramfs-)?[0-9a-f]{16,64}(\.cpio)?$`)

// guestStateKey names the saved state of a guest started with cfg: the
// QEMU binary and its arguments, with the paths that differ between runs
// (sockets, console log) and the VM's name left out, and each file it
// loads. An image vmimages names by its hash (the initramfs, the vmlinux
// under its bzImage's hash) is known by path and size; any other file
// also by its modification time, so a kernel rebuilt in place gets a key
// of its own. A file that cannot be read gives no key ("").
func guestStateKey(cfg qemu.Config) string {
	bin := cfg.Binary
	if bin == "" {
		bin = qemu.DefaultBinary
	}
	h := sha256.New()
	fmt.Fprintln(h, "vnetbench guest state 1")
	c := cfg
	c.Name, c.ConsoleLog, c.QMPSocket, c.AgentSocket, c.Incoming = "", "", "", "", false
	for _, a := range qemu.Args(c) {
		fmt.Fprintf(h, "%q\n", a)
	}
	files := []string{cfg.Kernel, cfg.Initrd, cfg.Firmware}
	if path, err := proc.LookPath(bin); err == nil {
		files = append(files, path) // else QEMU does not start anyway
	}
	for _, f := range files {
		if f == "" {
			continue
		}
		id, err := fileID(f)
		if err != nil {
			return ""
		}
		fmt.Fprintln(h, id)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// fileID is what guestStateKey knows a file by.
func fileID(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	id := fmt.Sprintf("%s %d", path, fi.Size())
	if !hexName().MatchString(filepath.Base(path)) && !hexName().MatchString(filepath.Base(filepath.Dir(path))) {
		id += " " + fi.ModTime().UTC().Format(time.RFC3339Nano)
	}
	return id, nil
}

// stateFor returns the key of cfg's saved state and the state's path
// when one is saved ("" = none), for a guest that may use one.
func (gs *guests) stateFor(g *guest, cfg qemu.Config) (key, path string) {
	st := gs.r.opts.GuestStates
	if st == nil || g.accel != qemu.TCG {
		return "", ""
	}
	key = guestStateKey(cfg)
	if key == "" {
		return "", ""
	}
	if path = st.find(key); gs.unused[path] {
		return key, "" // a guest did not start from it (notRestored)
	}
	return key, path
}

// restore starts the guest of cfg from the saved state at path instead
// of booting it: QEMU started paused, then the state loaded; the guest
// runs on from where its state was saved, and adopt awaits its agent's
// ready again. QEMU's start and the load have load to run the guest (a
// *slowLoadError after that). It returns how long each step took (for
// the log). On failure the QEMU it started is stopped.
func (gs *guests) restore(ctx, bctx context.Context, cfg qemu.Config, path string, load time.Duration) (*qemu.VM, string, error) {
	cfg.Incoming = true
	if err := gs.r.clearConsole(cfg.ConsoleLog); err != nil {
		return nil, "", err
	}
	lctx, cancel := context.WithTimeoutCause(bctx, load, &slowLoadError{load})
	defer cancel()
	t0 := time.Now()
	vm, err := qemu.Start(ctx, lctx, gs.r.exec, cfg, qemu.StartOptions{Netns: gs.r.ns.Name, CheckAccel: true})
	if err == nil {
		gs.r.repro.note("# QMP migrate-incoming exec:cat " + path + ", then cont: the guest starts from a state saved when an earlier lab booted it (drop -S -incoming defer to boot it)")
		t1 := time.Now()
		if err = qemu.LoadState(lctx, vm, path); err == nil {
			return vm, fmt.Sprintf("QEMU %.1fs, state %.1fs", t1.Sub(t0).Seconds(), time.Since(t1).Seconds()), nil
		}
		vm.Quit(context.WithoutCancel(ctx), qemu.StopGrace)
	}
	if le := (*slowLoadError)(nil); errors.As(context.Cause(lctx), &le) && bctx.Err() == nil {
		err = fmt.Errorf("%w (%v)", le, err)
	}
	return nil, "", err
}

// restoreLoadFloor is the least time QEMU's start and the state's load
// have to run a restored guest (restoreLoad); a variable for tests.
var restoreLoadFloor = 30 * time.Second

// restoreLoad bounds QEMU's start and the state's load (until the guest
// runs) for a guest whose boot timeout is boot: a sixteenth of it, at
// least restoreLoadFloor, at most boot. They took 5.7 s in a lab on the
// 2-core TCG machine (QEMU 1.1 s, the state 4.6 s of an 11.7 s restore;
// 3.6-3.9 s in a later run), and restores took ~20 s under load, of
// which the load at most ~14 s: 30 s is twice that, and lab-pktgen's 9m
// gives 33.75 s. A load that takes longer is taken for one that hangs,
// and the guest booted, without waiting out the boot timeout.
func restoreLoad(boot time.Duration) time.Duration {
	return min(boot, max(restoreLoadFloor, boot/16))
}

// slowLoadError is a saved state that did not run its guest within its
// restoreLoad.
type slowLoadError struct{ load time.Duration }

func (e *slowLoadError) Error() string {
	return fmt.Sprintf("the state did not load within %v of QEMU's start", e.load)
}

// saveState saves the state of g, booted and ready, as key for the
// next lab; a failure is logged, not the boot's: the guest runs on,
// unless it could not be resumed (an error then).
func (gs *guests) saveState(ctx context.Context, g *guest, key string) error {
	st := gs.r.opts.GuestStates
	if st == nil || !st.Save || key == "" || gs.saveOff {
		return nil
	}
	d, err := safefs.Open(gs.r.dir)
	if err == nil {
		defer d.Close()
		err = d.MkdirAll(GuestStateDir)
	}
	if err != nil {
		gs.r.logf("guest state not saved: %v", err)
		return nil
	}
	// KEY.tmp is vnetbench's own name in its own run directory (what
	// an interrupted save left); a link there is removed, not followed.
	tmp := filepath.Join(GuestStateDir, key+".tmp")
	if err := safefs.RemoveOwn(d, tmp); err != nil {
		gs.r.logf("guest state not saved: %v", err)
		return nil
	}
	start := time.Now()
	gs.r.repro.note("# QMP stop, migrate exec:cat > " + d.Join(tmp) + ", cont: the guest's state saved for the next lab")
	err = qemu.SaveState(ctx, g.vm, d.Join(tmp))
	if errors.Is(err, qemu.ErrNotResumed) {
		safefs.RemoveOwn(d, tmp)
		gs.notes.state("not saved " + key + ": the guest could not be resumed")
		return err
	}
	if err == nil {
		err = d.Rename(tmp, filepath.Join(GuestStateDir, key))
	}
	if err != nil {
		safefs.RemoveOwn(d, tmp)
		gs.r.logf("guest state not saved: %v", err)
		return nil
	}
	size := int64(0)
	if fi, err := d.Lstat(filepath.Join(GuestStateDir, key)); err == nil {
		size = fi.Size()
	}
	gs.notes.state("saved " + key)
	gs.r.logf("guest state %s saved in %.1fs (%d MB): a next lab starts its guest from it", key, time.Since(start).Seconds(), size>>20)
	return nil
}

// restoreWaitFloor is the least time a restored guest's agent has to
// answer (restoreWait); a variable for tests.
var restoreWaitFloor = 30 * time.Second

// restoreWait bounds the agent wait of a guest started from a saved
// state whose boot timeout is boot: an eighth of it (as scaleToBoot
// gives a stats request), at least restoreWaitFloor, at most boot. A
// restored agent answered 6.4-10 s after the state's load on the 2-core
// TCG machine, up to ~20 s under load: 30 s is half as much again, and a
// scenario that raised its boot timeout for a slow machine gives its
// restores more (lab-pktgen's 9m: 67.5 s). A restore that takes longer
// is taken for one that hangs, and the guest booted.
func restoreWait(boot time.Duration) time.Duration {
	return min(boot, max(restoreWaitFloor, boot/8))
}

// silentAgentError is a restored guest whose agent did not answer within
// its restoreWait, while its kernel reported no fault.
type silentAgentError struct{ wait time.Duration }

func (e *silentAgentError) Error() string {
	return fmt.Sprintf("its agent did not answer within %v of the state's load", e.wait)
}

// restored starts g from the saved state at path (restore) and adopts
// its VM as boot adopts a booted one, in a try of its own at starting g
// (s.live), whose undo steps go on u when it succeeds; its agent has
// restoreWait to answer. A state that does not start the guest is logged
// and noted, and false returned, its VM stopped: the caller boots the
// guest, with cfg.
func (gs *guests) restored(s *guestStart, g *guest, cfg *qemu.Config, path string, u *undo.Stack) bool {
	try := undo.New()
	cancel := s.live(g, try)
	defer cancel()
	s.agentWait = restoreWait(s.timeout)
	defer func() { s.agentWait = 0 }()
	vm, steps, err := gs.restore(s.ctx, s.bctx, *cfg, path, restoreLoad(s.timeout))
	if err == nil {
		t := time.Now()
		err = gs.adopt(s, g, vm, try)
		steps += fmt.Sprintf(", agent %.1fs", time.Since(t).Seconds())
	}
	if err != nil {
		if terr := try.Run(0); terr != nil {
			gs.r.logf("stop the guest started from saved state %s: %v", filepath.Base(path), terr)
		}
		gs.notRestored(s, cfg, path, err)
		return false
	}
	u.Merge(try)
	gs.notes.cmdline(qemu.Cmdline(*cfg))
	g.restored, g.restoreSteps = filepath.Base(path), steps
	// The agent answers as slowly as the guest booted, not as fast as it
	// was restored: its timeouts scale to the boot its state comes from.
	if va, ok := g.agent.(*vmAgent); ok && g.guestReady > g.bootTime {
		va.scaleToBoot(g.guestReady)
	}
	g.sink = "stack"
	gs.notes.state("restored " + g.restored)
	return true
}

// notRestored logs why the saved state at path did not start the guest
// (err), and notes it in env.json, unless the run was cancelled. This
// run starts no guest from the state again; the booted guest's state,
// saved under the same key, replaces it in a lab's cache.
//
// A guest whose kernel reported a fault once started from the state is
// booted as well, rather than failing its cell with the fault: the state
// is the likelier cause (it was saved by another QEMU process, in
// another lab, and the guest resumes from it in a VM it did not boot
// in), and a boot puts the kernel itself to the test: one that faults
// booted too fails as any booted guest does (agentBootError; under TCG its cell runs once more
// on a fresh guest, tcgFaultAgain). The faulted guest's console is kept:
// the boot writes a console of its own. So is that of a guest whose
// agent stayed silent (silentAgentError).
func (gs *guests) notRestored(s *guestStart, cfg *qemu.Config, path string, err error) {
	if s.ctx.Err() != nil {
		return
	}
	name := filepath.Base(path)
	if gs.unused == nil {
		gs.unused = map[string]bool{}
	}
	gs.unused[path] = true
	took := time.Since(s.began).Seconds()
	fe, se, le := faultOf(s.bctx), (*silentAgentError)(nil), (*slowLoadError)(nil)
	switch {
	case fe != nil:
		gs.notes.state("not restored " + name + ": kernel fault")
		gs.keepConsole(cfg)
		gs.r.logf("the guest started from saved state %s faulted after %.1fs: booting it (its console stays as %s; this run uses the state no more): %v",
			name, took, fe.Console, fe)
	case errors.As(err, &se):
		gs.notes.state(fmt.Sprintf("not restored %s: agent silent for %v", name, se.wait))
		console := cfg.ConsoleLog
		gs.keepConsole(cfg)
		gs.r.logf("guest not started from saved state %s after %.1fs, no kernel fault on its console (it stays as %s): booting it with a boot timeout of its own (this run uses the state no more): %v",
			name, took, console, err)
	case errors.As(err, &le):
		gs.notes.state(fmt.Sprintf("not restored %s: state not loaded within %v", name, le.load))
		gs.r.logf("guest not started from saved state %s after %.1fs: %v: booting it with a boot timeout of its own (this run uses the state no more)", name, took, err)
	default:
		gs.notes.state("not restored " + name + ": " + stateErrNote(err))
		gs.r.logf("guest not started from saved state %s after %.1fs (%v): booting it (this run uses the state no more)", name, took, err)
	}
}

// keepConsole gives the boot after a failed restore a console log of its
// own: the restored guest's stays, for what its kernel said.
func (gs *guests) keepConsole(cfg *qemu.Config) {
	cfg.ConsoleLog = filepath.Join(gs.r.dir, results.ConsoleLog(gs.boots))
	gs.boots++
}

// stateErrNote is err cut to env.json's note of a state that did not
// start the guest: its first line, at most 120 bytes, without the "; "
// that separates the notes.
func stateErrNote(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	msg = strings.ReplaceAll(msg, "; ", ", ")
	if len(msg) > 120 {
		msg = strings.ToValidUTF8(msg[:120], "") + "..."
	}
	return msg
}
