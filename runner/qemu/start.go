package qemu

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/proc"
)

// StartOptions say where QEMU runs and what Start checks and sets once
// it does: what differs between a host guest and a lab VM besides their
// devices.
type StartOptions struct {
	// Netns is the network namespace QEMU runs in ("" = the harness's).
	Netns string
	// CheckAccel confirms over QMP (query-kvm) that QEMU runs the
	// accelerator it was started with.
	CheckAccel bool
	// PinVCPUs pins vCPU i to host CPU PinVCPUs[i] (nil = no pinning):
	// a CPU number inside the VM then stays one host CPU.
	PinVCPUs []int
}

// Start boots the VM of c, for host guests and lab VMs alike: Launch
// (through ex, within ctx, QEMU's lifetime), then o's checks and pins,
// within bctx (nil = ctx), which bounds the start. On any error the QEMU
// it started is killed and waited for.
func Start(ctx, bctx context.Context, ex proc.Executor, c Config, o StartOptions) (*VM, error) {
	if bctx == nil {
		bctx = ctx
	}
	type res struct {
		vm  *VM
		err error
	}
	ch := make(chan res, 1)
	go func() {
		vm, err := Launch(ctx, ex, c, o.Netns)
		if err == nil {
			err = vm.afterLaunch(bctx, o)
		}
		if err != nil && vm != nil {
			vm.Kill()
			vm = nil
		}
		ch <- res{vm, err}
	}()
	select {
	case x := <-ch:
		return x.vm, x.err
	case <-bctx.Done():
		x := <-ch // Launch gives up on its own (the QMP wait is bounded)
		if x.vm != nil {
			x.vm.Kill()
		}
		if x.err != nil {
			return nil, x.err
		}
		return nil, bctx.Err()
	}
}

// afterLaunch checks the accelerator and pins the vCPUs as o says.
func (vm *VM) afterLaunch(ctx context.Context, o StartOptions) error {
	if o.CheckAccel {
		if err := vm.CheckAccel(ctx); err != nil {
			return vm.BootError("check accelerator", err)
		}
	}
	return vm.PinVCPUs(ctx, o.PinVCPUs)
}

// PinVCPUs pins vCPU thread i to host CPU cpus[i]; nothing to do without
// cpus. The pins last as long as the VM.
func (vm *VM) PinVCPUs(ctx context.Context, cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	tids, err := vm.VCPUThreads(ctx)
	if err != nil {
		return fmt.Errorf("pin vCPUs: %w", err)
	}
	if len(tids) > len(cpus) {
		return fmt.Errorf("pin vCPUs: %d vCPUs for %d host CPUs", len(tids), len(cpus))
	}
	for i, tid := range tids {
		var set unix.CPUSet
		set.Set(cpus[i])
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return fmt.Errorf("pin vCPU %d (thread %d) to host CPU %d: %w", i, tid, cpus[i], err)
		}
	}
	return nil
}

// Close stops the VM: it asks QEMU to quit and waits up to StopGrace,
// then kills it. Its own deadline, not a caller's, bounds the quit
// (teardown runs after a cancel too); it returns once QEMU is gone.
func (vm *VM) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*StopGrace)
	defer cancel()
	return vm.Quit(ctx, StopGrace)
}
