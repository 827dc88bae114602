package main

import (
	"os"

	"github.com/vnetbench/vnetbench/vmimages/agent"
)

// isGuestInit reports whether this process is the guest's /init: PID 1, or
// started as /init. Then the binary is the in-guest agent, not the CLI.
func isGuestInit() bool {
	return os.Getpid() == 1 || (len(os.Args) > 0 && os.Args[0] == "/init")
}

// runGuestAgent runs the agent; it powers the guest off and never returns.
func runGuestAgent() {
	agent.Main()
}
