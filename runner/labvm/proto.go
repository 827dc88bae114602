package labvm

import (
	"os"
	"time"

	"github.com/vnetbench/vnetbench/vmimages"
	"github.com/vnetbench/vnetbench/vmimages/vminit"
)

// Heartbeat is how often lab init prints an "alive" event while the inner
// command runs, and SilenceLimit how long the host waits for any console
// output from a lab whose inner command runs before it takes the lab
// kernel for stuck (Timeouts.Silence's default).
const (
	Heartbeat    = 10 * time.Second
	SilenceLimit = 60 * time.Second
)

// emit prints an event on stdout (the console), with the guest's uptime
// when e has none.
func emit(e vmimages.Event) {
	if e.Uptime == 0 {
		e.Uptime = uptime()
	}
	b, _ := vmimages.EncodeConsoleEvent(e)
	os.Stdout.Write(b)
}

func uptime() float64 { return vminit.Uptime().Seconds() }

// InitConfig is /lab.json in the initramfs: what lab init does.
type InitConfig struct {
	// Mode is "lab" (mount the host root, run Args in it, power off) or
	// "guest" (a nested guest: load modules, bring Links up, wait).
	Mode string `json:"mode"`
	// Modules are the module files in the initramfs, in load order.
	Modules []string `json:"modules"`
	// Missing lists requested modules the host found neither as files nor
	// built in (reported in the modules event).
	Missing []string `json:"missing,omitempty"`
	// RootTag is the 9p mount tag of the host root (read-only).
	RootTag string `json:"root_tag,omitempty"`
	// Shares are further 9p exports mounted at the same path as on the
	// host, in order (shareMount).
	Shares []InitShare `json:"shares,omitempty"`
	// Tmpfs are directories of the host root made writable with tmpfs.
	Tmpfs []string `json:"tmpfs,omitempty"`
	// Args is the inner vnetbench argv after the program name.
	Args []string `json:"args,omitempty"`
	// Env is the inner command's environment.
	Env []string `json:"env,omitempty"`
	// Dir is the inner command's working directory.
	Dir string `json:"dir,omitempty"`
	// Links are network interfaces set up (guest mode).
	Links []string `json:"links,omitempty"`
	// PerfKeys makes lab init hold the kernel's perf static keys on from
	// before the inner command starts until the lab powers off (see
	// runner/perfkeys): perf sessions inside then never make the kernel
	// patch its code.
	PerfKeys bool `json:"perf_keys,omitempty"`
	// DropReasons makes lab init attach the drop counter (dropmon) at the
	// same moment, and pass its map to the inner command (dropmon.EnvVar,
	// or why not in dropmon.ErrEnvVar).
	DropReasons bool `json:"drop_reasons,omitempty"`
	// KVM maps each KVM vendor module (KVMIntelModule, KVMAMDModule) to
	// the module files to load for it, in order (kvm and its dependencies
	// first; files of Modules are not repeated). Init loads one set, chosen
	// from /proc/cpuinfo (KVMVendorModule), after Modules and makes sure
	// /dev/kvm exists. Nil: no KVM.
	KVM map[string][]string `json:"kvm,omitempty"`
	// Check are modules loaded from replacement files (Initramfs.Replace):
	// after loading, each must be running with this srcversion and build
	// ID, else the lab fails (a packaged module won the load).
	Check []vminit.ModuleCheck `json:"check,omitempty"`
}

// InitShare is a 9p export of a host directory.
type InitShare struct {
	Tag  string `json:"tag"`
	Path string `json:"path"`
	// ReadOnly is a share QEMU exports read-only (the cache, the run
	// directory under an OutDir): lab init mounts it as the host root,
	// read-only and through the page cache (shareMount).
	ReadOnly bool `json:"read_only,omitempty"`
}
