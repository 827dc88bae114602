package main

import (
	"path/filepath"
	"slices"

	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/vmimages/agent"
)

// isGuestInit reports whether a process with this pid and argv is the
// guest's /init: started as /init (how the kernel runs an initramfs's init),
// or PID 1 under the name "init". Then the binary is the in-guest agent, not
// the CLI. PID 1 alone is not enough: in a container, "vnetbench ..." is
// often PID 1. A lab VM's /init is not the agent: its argv holds "lab-init"
// somewhere (the kernel passes unknown parameters to init before the
// arguments after "--"), and it runs the CLI's lab-init command instead.
func isGuestInit(pid int, argv []string) bool {
	if len(argv) == 0 || slices.Contains(argv[1:], labvm.InitCommand) {
		return false
	}
	return argv[0] == "/init" || (pid == 1 && filepath.Base(argv[0]) == "init")
}

// dispatch is main's single decision on what this process is: the in-guest
// agent (agent true), or the CLI with args (argv without the program name).
// A lab VM's /init (PID 1 or argv[0] "/init", "lab-init" anywhere in argv)
// gets args starting at "lab-init", dropping the unknown kernel parameters
// the kernel put before it.
func dispatch(pid int, argv []string) (agent bool, args []string) {
	if isGuestInit(pid, argv) {
		return true, nil
	}
	if len(argv) == 0 {
		return false, nil
	}
	args = argv[1:]
	if pid == 1 || argv[0] == "/init" {
		if i := slices.Index(args, labvm.InitCommand); i >= 0 {
			args = args[i:]
		}
	}
	return false, args
}

// runGuestAgent runs the agent, with the workloads' guest-side ops; it
// powers the guest off and never returns.
func runGuestAgent() {
	ops := map[string]agent.Op{}
	for name, op := range workload.GuestOps() {
		ops[name] = agent.Op(op)
	}
	agent.Main(ops)
}
