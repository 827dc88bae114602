package labvm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/runner/perfkeys"
	"github.com/vnetbench/vnetbench/vmimages"
	"github.com/vnetbench/vnetbench/vmimages/vminit"
)

// InitConfigPath is where lab init reads its configuration.
const InitConfigPath = "/lab.json"

// newRoot is where lab init mounts the host root before running the
// inner command chrooted into it.
const newRoot = "/newroot"

// labBinary is where lab init installs vnetbench in the lab root. Not
// /run/vnetbench: that is the directory of the run's ledgers
// (internal/ledger.Default), which a file there would make unusable.
const labBinary = "/run/vnetbench-lab"

// Init is the lab VM's (or nested guest's) PID 1: the vnetbench binary
// started by the kernel as /init with "lab-init" after "--" on the kernel
// command line. It never returns in a VM: it powers off (lab mode) or waits
// forever (guest mode). Outside PID 1 it refuses to run.
func Init() error {
	if os.Getpid() != 1 {
		return errors.New("lab-init is the lab VM's /init and runs only as PID 1")
	}
	err := initMain()
	if err != nil {
		emit(vmimages.Event{Ev: vmimages.EvError, Msg: err.Error()})
	}
	vminit.PowerOff()
	for {
		time.Sleep(time.Hour) // not reached
	}
}

func initMain() error {
	if err := vminit.MountAll(vminit.Base); err != nil {
		return err
	}
	rel, _ := hostnet.KernelRelease() // "" when unknown
	emit(vmimages.Event{Ev: vmimages.EvInit, Kernel: rel})
	b, err := os.ReadFile(InitConfigPath)
	if err != nil {
		return fmt.Errorf("read %s: %w", InitConfigPath, err)
	}
	var cfg InitConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("parse %s: %w", InitConfigPath, err)
	}
	t0 := time.Now()
	n, err := vminit.LoadModules(cfg.Modules)
	if err != nil {
		return err
	}
	kvm, noKVM, err := loadKVM(&cfg)
	if err != nil {
		return err
	}
	checked, err := vminit.CheckModules("/sys/module", cfg.Check)
	if err != nil {
		return err
	}
	emit(vmimages.Event{Ev: vmimages.EvModules, StepMS: time.Since(t0).Milliseconds(), Loaded: n, Missing: cfg.Missing, KVM: kvm, NoKVM: noKVM, Checked: checked})
	switch cfg.Mode {
	case "guest":
		for _, l := range cfg.Links {
			if err := linkUp(l); err != nil {
				return err
			}
		}
		printSlowInitcalls() // before ready: the host may stop the guest right after
		emit(vmimages.Event{Ev: vmimages.EvReady})
		for { // sleep, not select{}: the runtime would call a goroutine-free PID 1 deadlocked
			time.Sleep(time.Hour)
		}
	case "lab":
		var drops labDrops
		if cfg.PerfKeys || cfg.DropReasons {
			withOneCPU(func() {
				if cfg.PerfKeys {
					holdPerfKeys()
				}
				if cfg.DropReasons {
					drops = attachDrops()
				}
			})
		}
		cfg.Env = append(cfg.Env, drops.env...)
		code, err := runLab(&cfg, drops.files)
		if err != nil {
			return err
		}
		emit(vmimages.Event{Ev: vmimages.EvExit, Code: code})
		return nil
	}
	return fmt.Errorf("unknown lab init mode %q", cfg.Mode)
}

const ninePOpts = "trans=virtio,version=9p2000.L,msize=512000"

// shareMount returns the mount flags and options of share s. A read-write
// share bypasses the page cache: the host reads what the run inside
// writes there. A read-only one is mounted as the host root is, read-only
// through the page cache (cache=loose). Without the page cache the 9p
// client reads nothing ahead, so a file mapped into memory comes one 4 KiB
// page per 9p request: QEMU maps the kernel it boots (-kernel), and a
// nested guest's vmlinux, in the host's cache, took 15 s that way under
// TCG before the guest's kernel started, against 3 s from the page cache
// (docs/lab.md). What a read-only share holds does not change under the
// lab: the cache's files are content-addressed and written by rename, the
// run directory's before the lab boots.
func shareMount(s InitShare) (flags uintptr, opts string) {
	if s.ReadOnly {
		return unix.MS_RDONLY, ninePOpts + ",cache=loose"
	}
	return 0, ninePOpts
}

// runLab mounts the host root read-only with tmpfs and the shares on
// top, then runs the inner vnetbench chrooted there, and returns its
// exit status.
func runLab(cfg *InitConfig, extra []*os.File) (int, error) {
	if err := mountLabRoot(cfg); err != nil {
		return 0, err
	}
	return runInner(cfg, extra)
}

// mountLabRoot builds the lab root at newRoot: the host root read-only,
// the kernel's filesystems, cfg's tmpfs directories and shares, and this
// binary at labBinary.
func mountLabRoot(cfg *InitConfig) error {
	os.MkdirAll(newRoot, 0o755)
	if err := unix.Mount(cfg.RootTag, newRoot, "9p", unix.MS_RDONLY, ninePOpts+",cache=loose"); err != nil {
		return fmt.Errorf("mount host root (9p tag %s): %w", cfg.RootTag, err)
	}
	for _, m := range []struct{ src, dst, fstype, opts string }{
		{"proc", "/proc", "proc", ""}, {"sysfs", "/sys", "sysfs", ""}, {"devtmpfs", "/dev", "devtmpfs", ""},
		{"devpts", "/dev/pts", "devpts", "ptmxmode=0666"}, {"tmpfs", "/dev/shm", "tmpfs", "mode=1777"},
		{"cgroup2", "/sys/fs/cgroup", "cgroup2", ""}, {"debugfs", "/sys/kernel/debug", "debugfs", ""},
		{"tracefs", "/sys/kernel/tracing", "tracefs", ""}, {"bpf", "/sys/fs/bpf", "bpf", ""},
	} {
		dst := newRoot + m.dst
		os.MkdirAll(dst, 0o755) // fails on the read-only root: the directory then already exists or the mount fails below
		if err := unix.Mount(m.src, dst, m.fstype, 0, m.opts); err != nil && m.fstype != "cgroup2" && m.fstype != "debugfs" && m.fstype != "tracefs" && m.fstype != "bpf" {
			return fmt.Errorf("mount %s: %w", m.dst, err)
		}
	}
	for _, d := range cfg.Tmpfs {
		dst := newRoot + d
		if fi, err := os.Stat(dst); err != nil || !fi.IsDir() {
			continue
		}
		mode := "mode=0755"
		if d == "/tmp" || d == "/var/tmp" {
			mode = "mode=1777"
		}
		if err := unix.Mount("tmpfs", dst, "tmpfs", 0, mode); err != nil {
			return fmt.Errorf("mount tmpfs on %s: %w", d, err)
		}
	}
	for _, s := range cfg.Shares {
		dst := newRoot + s.Path
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fmt.Errorf("share %s: %w (it must exist on the host or lie under a tmpfs directory)", s.Path, err)
		}
		flags, opts := shareMount(s)
		if err := unix.Mount(s.Tag, dst, "9p", flags, opts); err != nil {
			return fmt.Errorf("mount share %s (9p tag %s): %w", s.Path, s.Tag, err)
		}
	}
	// The binary itself runs inside: copy /init to a tmpfs, beside (not
	// at) /run/vnetbench, the directory of its ledgers.
	bin := newRoot + labBinary
	if err := copyFile("/init", bin); err != nil {
		return fmt.Errorf("install vnetbench in the lab root: %w (is /run a tmpfs?)", err)
	}
	return nil
}

// runInner runs the inner vnetbench chrooted into the lab root, with a
// heartbeat on the console while it runs, and returns its exit status.
func runInner(cfg *InitConfig, extra []*os.File) (int, error) {
	dir := cfg.Dir
	if dir == "" {
		dir = "/"
	}
	// Chrooted, with exactly cfg.Env (not the kernel's leftovers from its
	// command line that PID 1 holds) and in a session of its own, writing
	// straight to the console.
	c := proc.Cmd{
		Argv:       append([]string{"vnetbench"}, cfg.Args...),
		Env:        cfg.Env,
		Dir:        dir,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		ExtraFiles: extra,
		Root:       &proc.Root{Dir: newRoot, Path: labBinary},
	}
	emit(vmimages.Event{Ev: vmimages.EvStart})
	// The heartbeat: the host takes a lab that stays silent for
	// SilenceLimit for a kernel that stopped (it may die without a word
	// on the console, both CPUs stuck).
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				emit(vmimages.Event{Ev: vmimages.EvAlive})
			}
		}
	}()
	p, err := proc.Real{}.Start(context.Background(), c)
	if err == nil {
		err = p.Wait()
	}
	if err == nil {
		return 0, nil
	}
	var ee *proc.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Status(); ok {
			return st, nil
		}
	}
	return 0, fmt.Errorf("run %s: %w", strings.Join(cfg.Args, " "), err)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// linkUp sets a network interface up (SIOCSIFFLAGS |= IFF_UP).
func linkUp(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("link %s up: %w", name, err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return fmt.Errorf("link %s up: %w", name, err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("link %s up: get flags: %w", name, err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("link %s up: %w", name, err)
	}
	return nil
}

// printSlowInitcalls prints, when the kernel was booted with
// initcall_debug (a boot profile, e.g. lab-selftest --boot-only
// --variants), where its boot spent 100 ms or more
// (vminit.PrintBootProfile): after the boot, so that printing does not
// slow it.
func printSlowInitcalls() {
	if vminit.BootProfiled() {
		vminit.PrintBootProfile(os.Stdout, 100*time.Millisecond)
	}
}

// holdPerfKeys turns the kernel's perf static keys on for good (held until
// the power-off, never released; see runner/perfkeys); called by
// withOneCPU. Flipping a key live-patches the scheduler with an int3 and
// IPIs; under QEMU's multi-threaded TCG a vCPU that runs the patched site
// can keep executing a stale translation of the int3 and never answer (the
// lockup this avoids). With one CPU online nothing runs the code being
// patched, and the keys then never flip again.
func holdPerfKeys() {
	if _, err := perfkeys.Hold(); err != nil {
		fmt.Fprintf(os.Stdout, "lab-init: %v (perf sessions inside may make the kernel patch its code)\n", err)
	}
}
