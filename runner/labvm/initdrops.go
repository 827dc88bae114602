package labvm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vnetbench/vnetbench/internal/dropmon"
)

// heldDrops keeps the attached counter reachable until the power-off:
// cilium/ebpf closes a program's, a link's and a map's descriptors when
// the garbage collector finds them unreachable, and a closed link is a
// detached probe (and the kernel patching its code again).
var heldDrops []*dropmon.Monitor

// labDrops is what lab init passes the run inside about the drop counter:
// the map's descriptor (fd 3) and dropmon.EnvVar, or why there is none.
type labDrops struct {
	env   []string
	files []*os.File
}

// attachDrops attaches the drop counter (called by withOneCPU: attaching
// patches the kernel's code). The counter stays attached until the power
// off; the run inside reads its map.
func attachDrops() labDrops {
	// A kprobe the kernel "optimizes" later (an int3 turned into a jump)
	// would be patched again, by a worker, while traffic runs: keep it
	// as attached now. (A kprobe on a function's ftrace site, as in
	// Debian's kernels and the lab's own config, needs no optimizing.)
	os.WriteFile("/proc/sys/debug/kprobes-optimization", []byte("0"), 0)
	mon, err := dropmon.Attach()
	if err != nil {
		return labDrops{env: []string{dropmon.ErrEnvVar + "=" + oneLine(err.Error())}}
	}
	f, err := mon.File()
	if err != nil {
		return labDrops{env: []string{dropmon.ErrEnvVar + "=" + oneLine(err.Error())}}
	}
	heldDrops = append(heldDrops, mon)
	fmt.Fprintf(os.Stdout, "lab-init: counting drops at %s\n", mon.Probe)
	// ExtraFiles[0] is fd 3 in the child.
	return labDrops{env: []string{mon.Env(3)}, files: []*os.File{f}}
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// withOneCPU runs fn with every CPU but the boot CPU offline, then brings
// them back: code the kernel patches meanwhile runs nowhere (see
// holdPerfKeys).
func withOneCPU(fn func()) {
	var offline []string
	paths, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/online")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == "1" && os.WriteFile(p, []byte("0"), 0) == nil {
			offline = append(offline, p)
		}
	}
	fn()
	for _, p := range offline {
		if werr := os.WriteFile(p, []byte("1"), 0); werr != nil {
			fmt.Fprintf(os.Stdout, "lab-init: bring %s back: %v\n", filepath.Dir(p), werr)
		}
	}
}
