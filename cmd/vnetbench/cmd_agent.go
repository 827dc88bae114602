package main

import (
	"os"
	"path/filepath"

	"github.com/vnetbench/vnetbench/vmimages/agent"
)

// isGuestInit reports whether this process is the guest's /init: started
// as /init (how the kernel runs an initramfs's init), or PID 1 under the
// name "init". Then the binary is the in-guest agent, not the CLI. PID 1
// alone is not enough: in a container, "vnetbench ..." is often PID 1.
func isGuestInit() bool {
	if len(os.Args) == 0 {
		return false
	}
	return os.Args[0] == "/init" || (os.Getpid() == 1 && filepath.Base(os.Args[0]) == "init")
}

// runGuestAgent runs the agent; it powers the guest off and never returns.
func runGuestAgent() {
	agent.Main()
}
