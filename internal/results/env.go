package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/safefs"
)

// Env describes where a run was measured: env.json. The runner fills it;
// report only stores and prints it.
type Env struct {
	Run      string    `json:"run,omitempty"`
	Created  time.Time `json:"created,omitempty"`
	Version  string    `json:"version,omitempty"`  // vnetbench version
	Scenario string    `json:"scenario,omitempty"` // scenario name
	Seed     int64     `json:"seed,omitempty"`     // cell order seed
	// Set lists the command line's overrides of scenario keys (--set
	// KEY=VALUE), in order.
	Set []string `json:"set,omitempty"`
	// Command is the vnetbench command line that made the run, without
	// its output directory (argv: "vnetbench", "run", SCENARIO, ...), for
	// the line that reproduces it.
	Command       []string `json:"command,omitempty"`
	Hostname      string   `json:"hostname,omitempty"`
	KernelRelease string   `json:"kernel_release,omitempty"` // uname -r
	// ProcVersion is /proc/version (the build's banner: compiler, build
	// number and time), ConfigSHA256 the SHA-256 of the kernel's config
	// (/proc/config.gz uncompressed, else /boot/config-RELEASE: the file in
	// ConfigSource), Modules the identity of the datapath's modules (tun,
	// tap, vhost_net, pktgen): two builds with one release string differ
	// here.
	ProcVersion  string              `json:"proc_version,omitempty"`
	ConfigSHA256 string              `json:"config_sha256,omitempty"`
	ConfigSource string              `json:"config_source,omitempty"`
	Modules      map[string]ModuleID `json:"modules,omitempty"`
	Cmdline      string              `json:"cmdline,omitempty"` // /proc/cmdline
	// Mitigations maps a /sys/devices/system/cpu/vulnerabilities entry to
	// its text ("spectre_v2": "Mitigation: ...").
	Mitigations map[string]string `json:"mitigations,omitempty"`
	CPUModel    string            `json:"cpu_model,omitempty"`
	CPUs        int               `json:"cpus,omitempty"`
	Governor    string            `json:"governor,omitempty"` // scaling governor, "" when unknown
	SMT         string            `json:"smt,omitempty"`      // /sys/devices/system/cpu/smt/control
	QEMUVersion string            `json:"qemu_version,omitempty"`
	PerfVersion string            `json:"perf_version,omitempty"`
	Accel       string            `json:"accel,omitempty"` // "kvm", "tcg", or "kvm+tcg" when the cells' guests differ
	// GuestCmdline lists every guest kernel command line the run booted
	// with (distinct ones, in boot order): its tuning depends on the
	// accelerator and on guest.cmdline.
	GuestCmdline []string `json:"guest_cmdline,omitempty"`
	// Kernels holds the environment seen under each kernel label when it
	// differs from the host's (lab mode: each kernel runs in its own VM).
	Kernels map[string]*Env `json:"kernels,omitempty"`
	// Build is the identity of a kernel built from source (kernels: tree),
	// in the Env of its label.
	Build *KernelBuild `json:"build,omitempty"`
	// LabRetry, in the Env of a lab kernel's label (Kernels), says the
	// kernel's lab VM was booted again; nil: it was not.
	LabRetry *LabRetry `json:"lab_retry,omitempty"`
	// Extra holds facts without a field of their own (ExtraGuestState,
	// ...).
	Extra map[string]string `json:"extra,omitempty"`
}

// LabRetry records a lab VM booted again once: the first one's own kernel
// failed under TCG (a fault on its console, or the VM stopped), most
// likely the emulator's fault. The samples the first lab VM finished are
// kept; the rest were measured in the second.
type LabRetry struct {
	// Why is the first lab VM's failure, one line, clipped: its kernel's
	// fault line, or how the VM stopped.
	Why string `json:"why"`
	// Console is the first lab VM's console log, kept, relative to the
	// run directory (LabFirstConsole).
	Console string `json:"console"`
}

// ModuleID identifies one kernel module as the running kernel has it.
type ModuleID struct {
	// State is "loaded", "built-in" or "not loaded" (built in without a
	// /sys/module entry, or absent).
	State string `json:"state"`
	// SrcVersion is /sys/module/NAME/srcversion (a hash of the module's
	// sources), BuildID the GNU build-id of the loaded module
	// (/sys/module/NAME/notes/.note.gnu.build-id).
	SrcVersion string `json:"srcversion,omitempty"`
	BuildID    string `json:"build_id,omitempty"`
}

// IdentityDiff says how the kernels of e and o differ: the first of
// /proc/version, the config's hash, a module's srcversion or build-id and
// a source build's identity that both record and that differs ("" when
// none does, also when either records none of them).
func (e *Env) IdentityDiff(o *Env) string {
	if e == nil || o == nil {
		return ""
	}
	if e.ProcVersion != "" && o.ProcVersion != "" && e.ProcVersion != o.ProcVersion {
		return fmt.Sprintf("/proc/version %q vs %q", e.ProcVersion, o.ProcVersion)
	}
	if e.ConfigSHA256 != "" && o.ConfigSHA256 != "" && e.ConfigSHA256 != o.ConfigSHA256 {
		return fmt.Sprintf("kernel config sha256 %.12s vs %.12s", e.ConfigSHA256, o.ConfigSHA256)
	}
	for _, name := range sortedModuleNames(e.Modules) {
		a, b := e.Modules[name], o.Modules[name]
		if a.SrcVersion != "" && b.SrcVersion != "" && a.SrcVersion != b.SrcVersion {
			return fmt.Sprintf("%s srcversion %s vs %s", name, a.SrcVersion, b.SrcVersion)
		}
		if a.BuildID != "" && b.BuildID != "" && a.BuildID != b.BuildID {
			return fmt.Sprintf("%s build-id %.12s vs %.12s", name, a.BuildID, b.BuildID)
		}
	}
	if e.Build != nil && o.Build != nil && e.Build.Key != "" && o.Build.Key != "" && e.Build.Key != o.Build.Key {
		return fmt.Sprintf("source build %q vs %q", e.Build.Describe(), o.Build.Describe())
	}
	return ""
}

func sortedModuleNames(m map[string]ModuleID) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// KernelBuild says which kernel a label built from source: the tree and
// commit, the patches on top, the config, and what the build produced.
type KernelBuild struct {
	// Release is the kernel release (uname -r), ProcVersion its banner
	// (/proc/version, read from the built vmlinux).
	Release     string `json:"release"`
	ProcVersion string `json:"proc_version,omitempty"`
	// ConfigSHA256 is the SHA-256 of the final .config; Fragment that of
	// the config fragment it was made from (harness base + scenario's).
	ConfigSHA256 string `json:"config_sha256"`
	Fragment     string `json:"fragment_sha256,omitempty"`
	// Tree is the source tree; Ref and Commit are set for a git tree,
	// TreeHash (of the files' names, sizes and times) for a plain one.
	Tree     string `json:"tree"`
	Ref      string `json:"ref,omitempty"`
	Commit   string `json:"commit,omitempty"`
	TreeHash string `json:"tree_hash,omitempty"`
	// Patches are applied in this order.
	Patches []PatchID `json:"patches,omitempty"`
	// Compiler is the compiler's version line.
	Compiler string `json:"compiler,omitempty"`
	// Key names the build in the build cache.
	Key string `json:"key"`
	// Seconds is the build's wall time, CPUSeconds the CPU time of make and
	// the compilers (user + system; the work however loaded the machine).
	Seconds    float64 `json:"build_s,omitempty"`
	CPUSeconds float64 `json:"build_cpu_s,omitempty"`
	// Mode is "modules" for a kernel tested by rebuilding only the
	// modules its series touches: Debian's packaged kernel (Debian: the
	// linux-image package and version) booted with Modules loaded in
	// place of its own, built against Headers. A full build leaves it
	// empty; FullReason then says why the module build did not qualify
	// ("" when none was tried).
	Mode       string          `json:"mode,omitempty"`
	Debian     string          `json:"debian,omitempty"`
	Headers    string          `json:"headers,omitempty"`
	Modules    []RebuiltModule `json:"modules_replaced,omitempty"`
	FullReason string          `json:"full_reason,omitempty"`
	// Timings are the build steps this run performed for the kernel
	// (fetches, decisions, builds not found in the cache), seconds per
	// item by step kind (internal/estimate's Step kinds): the estimate
	// table learns them.
	Timings map[string]float64 `json:"timings_s,omitempty"`
}

// ModeModules is KernelBuild.Mode of a module build.
const ModeModules = "modules"

// RebuiltModule is a module built for a lab kernel and loaded in place
// of the packaged one: its name, file, srcversion, GNU build ID and
// SHA-256. Checked is set when the lab found exactly this build running
// (/sys/module/NAME's srcversion and build ID) after loading it.
type RebuiltModule struct {
	Name       string `json:"name"`
	File       string `json:"file"`
	SrcVersion string `json:"srcversion,omitempty"`
	BuildID    string `json:"build_id,omitempty"`
	SHA256     string `json:"sha256"`
	Checked    bool   `json:"checked,omitempty"`
}

// PatchID names one applied patch.
type PatchID struct {
	File    string `json:"file"`
	Subject string `json:"subject,omitempty"`
	SHA256  string `json:"sha256"`
}

// Describe says in one line which kernel this is: "6.1.192 built from
// TREE at COMMIT + 1 patch (SUBJECT), config 1a2b3c4d5e6f".
func (b *KernelBuild) Describe() string {
	var s strings.Builder
	if b.Mode == ModeModules {
		var names []string
		for _, m := range b.Modules {
			names = append(names, m.Name)
		}
		fmt.Fprintf(&s, "%s (Debian's kernel) with modules %s rebuilt from %s", b.Release, strings.Join(names, ", "), b.Tree)
	} else {
		fmt.Fprintf(&s, "%s built from %s", b.Release, b.Tree)
	}
	if b.Commit != "" {
		fmt.Fprintf(&s, " at %.12s", b.Commit)
	}
	switch n := len(b.Patches); n {
	case 0:
	case 1:
		s.WriteString(" + 1 patch")
		if sub := b.Patches[0].Subject; sub != "" {
			fmt.Fprintf(&s, " (%s)", sub)
		}
	default:
		fmt.Fprintf(&s, " + %d patches", n)
	}
	fmt.Fprintf(&s, ", config %.12s", b.ConfigSHA256)
	return s.String()
}

// SetExtra sets Extra[key] to value, making Extra when it is nil.
func (e *Env) SetExtra(key, value string) {
	if e.Extra == nil {
		e.Extra = map[string]string{}
	}
	e.Extra[key] = value
}

// EmulatedMark is how every vnetbench output marks numbers measured
// under emulation: report's banner, JUnit and LAVA text, the mail, and
// history.
const EmulatedMark = "EMULATED (QEMU TCG, no KVM)"

// Emulated reports whether the environment ran guests without hardware
// acceleration.
func (e *Env) Emulated() bool { return e != nil && e.Accel == "tcg" }

// WriteEnv writes env.json in dir atomically (temporary file + rename,
// through safefs).
func WriteEnv(dir string, env Env) error {
	d, err := safefs.Open(dir)
	if err != nil {
		return fmt.Errorf("write env: %w", err)
	}
	defer d.Close()
	return writeEnv(d, env)
}

func writeEnv(d *safefs.Dir, env Env) error {
	b, err := json.MarshalIndent(&env, "", "  ")
	if err != nil {
		return fmt.Errorf("encode env: %w", err)
	}
	b = append(b, '\n')
	if err := d.WriteFile(EnvFile, b, 0o644); err != nil {
		return fmt.Errorf("write env: %w", err)
	}
	return nil
}

// ReadEnv reads dir's env.json (no link followed, at most
// safefs.MaxSmall). A missing file gives a zero Env and no error.
func ReadEnv(dir string) (*Env, error) {
	d, err := safefs.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("read env: %w", err)
	}
	defer d.Close()
	b, err := d.ReadFile(EnvFile, safefs.MaxSmall)
	if errors.Is(err, fs.ErrNotExist) {
		return &Env{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read env: %w", err)
	}
	var env Env
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fault.Input("%s: %v; fix or delete the file", filepath.Join(dir, EnvFile), err)
	}
	return &env, nil
}

// ExtraGuestState is the Env.Extra key that says which guests of a run
// started from a state an earlier lab saved instead of booting
// ("restored KEY"), which states did not start its guest ("not restored
// KEY: why": the guest was booted instead) and which states it saved
// ("saved KEY"), "; " between notes.
const ExtraGuestState = "guest_state"
