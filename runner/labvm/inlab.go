package labvm

import (
	"os"
	"slices"
	"strings"
)

// errNotInLab refuses the in-lab checks (lab-selftest, its perf stress)
// outside a lab VM: they make a tap named vnbt0 and a nested QEMU in the
// network namespace they run in, which on a host is the host's own.
var errNotInLab = inputErrorf("lab-selftest runs only inside a lab VM, where its tap and nested guest are the VM's own; on a host, run a lab scenario (vnetbench run lab-pktgen)")

// InLab reports whether this process runs inside a lab VM: a kernel
// booted with lab init as its /init (initCmdline ends "-- lab-init").
func InLab() bool {
	b, err := os.ReadFile("/proc/cmdline")
	return err == nil && labCmdline(string(b))
}

// labCmdline reports whether a kernel command line hands InitCommand to
// /init.
func labCmdline(s string) bool {
	f := strings.Fields(s)
	i := slices.Index(f, "--")
	return i >= 0 && i+1 < len(f) && f[i+1] == InitCommand
}

// inLab is InLab, replaceable by tests.
var inLab = InLab
