package qemu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A guest's saved state is QEMU's migration stream written to a file
// (SaveState) and read back by a QEMU started with the same command line
// and Config.Incoming (LoadState). They are functions, not VM methods: a
// VM's own methods start, watch and stop it: the guest runs on where it was saved,
// without booting. QEMU 7.2 has no file: migration URI, so the stream
// goes through exec:cat; the path is quoted for the shell QEMU runs it
// with, and a path that cannot be quoted safely is refused.

// stateBandwidth lifts QEMU's migration rate limit (128 MiB/s by
// default): the guest is stopped while its state is written, so nothing
// competes with the copy.
const stateBandwidth = int64(1) << 40

// statePoll is how often query-migrate is asked while a state moves.
const statePoll = 50 * time.Millisecond

// ErrNotResumed is a SaveState whose guest stayed stopped: nothing may
// be measured on it.
var ErrNotResumed = errors.New("the guest could not be resumed")

// SaveState stops the guest, writes its state to path and resumes it.
// A guest that cannot be resumed is an error wrapping ErrNotResumed.
func SaveState(ctx context.Context, vm *VM, path string) error {
	uri, err := execURI("cat > ", path)
	if err != nil {
		return err
	}
	q := vm.qmp
	if err := q.Execute(ctx, "stop", nil, nil); err != nil {
		return fmt.Errorf("save guest state: %w", err)
	}
	err = q.Execute(ctx, "migrate-set-parameters", map[string]any{"max-bandwidth": stateBandwidth}, nil)
	if err == nil {
		err = q.Execute(ctx, "migrate", map[string]any{"uri": uri}, nil)
	}
	if err == nil {
		err = waitMigration(ctx, vm)
	}
	if cerr := resume(context.WithoutCancel(ctx), vm); cerr != nil {
		return fmt.Errorf("save guest state: %w: %w", ErrNotResumed, errors.Join(cerr, err))
	}
	if err != nil {
		return fmt.Errorf("save guest state to %s: %w", path, err)
	}
	return nil
}

// LoadState reads the state SaveState wrote to path into a VM started
// with Config.Incoming, and starts its vCPUs.
func LoadState(ctx context.Context, vm *VM, path string) error {
	if !vm.Config.Incoming {
		return errors.New("load guest state: the VM was not started to receive one (Config.Incoming)")
	}
	uri, err := execURI("cat ", path)
	if err != nil {
		return err
	}
	q := vm.qmp
	if err := q.Execute(ctx, "migrate-incoming", map[string]any{"uri": uri}, nil); err != nil {
		return fmt.Errorf("load guest state %s: %w", path, err)
	}
	if err := waitMigration(ctx, vm); err != nil {
		return fmt.Errorf("load guest state %s: %w", path, err)
	}
	if err := q.Execute(ctx, "cont", nil, nil); err != nil {
		return fmt.Errorf("load guest state %s: start the guest: %w", path, err)
	}
	return nil
}

// migrationInfo is the part of query-migrate's reply waitMigration reads.
type migrationInfo struct {
	Status    string `json:"status"`
	ErrorDesc string `json:"error-desc"`
}

// waitMigration waits for the migration under way to complete; a failed
// or cancelled one, or QEMU exiting, is an error.
func waitMigration(ctx context.Context, vm *VM) error {
	return pollQMP(ctx, vm, func() (bool, error) {
		var mi migrationInfo
		if err := vm.qmp.Execute(ctx, "query-migrate", nil, &mi); err != nil {
			return false, err
		}
		switch mi.Status {
		case "completed":
			return true, nil
		case "failed", "cancelled":
			if mi.ErrorDesc == "" {
				mi.ErrorDesc = "no reason given"
			}
			return false, fmt.Errorf("migration %s: %s", mi.Status, mi.ErrorDesc)
		}
		return false, nil
	})
}

// pollQMP asks done every statePoll until it says so or fails; QEMU
// exiting is an error, and so is ctx ending (ctx.Err()).
func pollQMP(ctx context.Context, vm *VM, done func() (bool, error)) error {
	for {
		if ok, err := done(); ok || err != nil {
			return err
		}
		select {
		case <-vm.proc.Done():
			return fmt.Errorf("qemu exited: %s", vm.ExitState())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(statePoll):
		}
	}
}

// finishBound bounds resume's wait for QEMU to leave finish-migrate.
const finishBound = 10 * time.Second

// resume starts the vCPUs of a guest stopped for a migration once QEMU has
// left its finish-migrate run state. query-migrate says "completed" (or
// "failed") before QEMU's migration thread moves the run state on to
// postmigrate, and a cont in between is refused ("Migration is not
// finalized yet"): a race that failed a lab in CI.
func resume(ctx context.Context, vm *VM) error {
	ctx, cancel := context.WithTimeout(ctx, finishBound)
	defer cancel()
	err := pollQMP(ctx, vm, func() (bool, error) {
		var st struct{ Status string }
		err := vm.qmp.Execute(ctx, "query-status", nil, &st)
		return err == nil && st.Status != "finish-migrate", err
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("QEMU stayed in run state finish-migrate for %v after the migration ended", finishBound)
	}
	if err != nil {
		return err
	}
	return vm.qmp.Execute(ctx, "cont", nil, nil)
}

// execURI is QEMU's exec: migration URI running cmd with path, quoted
// for /bin/sh; a path with a quote or a newline is refused.
func execURI(cmd, path string) (string, error) {
	if path == "" || strings.ContainsAny(path, "'\n\x00") {
		return "", fmt.Errorf("guest state path %q: empty or holds a quote or newline", path)
	}
	return "exec:" + cmd + "'" + path + "'", nil
}
