package runner

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/qemu"
)

// Tool is a program the runner drives, with how to ask its version.
type Tool = workload.Tool

// AllTools are the programs `run` may need: QEMU, the workloads' tools,
// perf and ip.
func AllTools() []Tool {
	out := []Tool{{Name: qemu.DefaultBinary, Package: "qemu-system-x86", Version: []string{qemu.DefaultBinary, "--version"}}}
	out = append(out, workload.AllTools()...)
	return append(out,
		Tool{Name: "perf", Package: "linux-perf", Version: []string{"perf", "--version"}},
		Tool{Name: "ip", Package: "iproute2", Version: []string{"ip", "-V"}})
}

// ToolVersion returns the line of the tool's version output that starts
// with "NAME version" (socat's second line), else its first line, or ""
// when it is missing.
func ToolVersion(ctx context.Context, ex proc.Executor, t Tool) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := ex.Run(ctx, proc.Cmd{Argv: t.Version})
	if err != nil && len(out) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, l := range lines {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, t.Name+" version ") {
			return l
		}
	}
	return strings.TrimSpace(lines[0])
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Governor is cpu0's cpufreq scaling governor ("" when there is none).
func Governor() string {
	return readTrim("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
}

// Mitigations maps each CPU vulnerability to the kernel's text.
func Mitigations() map[string]string {
	dir := "/sys/devices/system/cpu/vulnerabilities"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for _, e := range ents {
		m[e.Name()] = readTrim(filepath.Join(dir, e.Name()))
	}
	return m
}

// CollectEnv describes this host for env.json.
func CollectEnv(ctx context.Context, ex proc.Executor, accel qemu.Accel) results.Env {
	kernelRelease, _ := hostnet.KernelRelease() // "" when unknown
	host, _ := os.Hostname()
	e := results.Env{
		Created:       time.Now().UTC(),
		Hostname:      host,
		KernelRelease: kernelRelease,
		Cmdline:       readTrim("/proc/cmdline"),
		Mitigations:   Mitigations(),
		CPUModel:      cpuModel(),
		CPUs:          runtime.NumCPU(),
		Governor:      Governor(),
		SMT:           readTrim("/sys/devices/system/cpu/smt/control"),
		Accel:         string(accel),
		Extra:         map[string]string{},
	}
	KernelIdentity{Release: e.KernelRelease}.Fill(&e)
	for _, t := range AllTools() {
		if t.Version == nil {
			continue
		}
		v := ToolVersion(ctx, ex, t)
		switch t.Name {
		case qemu.DefaultBinary:
			e.QEMUVersion = v
		case "perf":
			e.PerfVersion = v
		default: // ip and the workloads' tools
			if v != "" {
				e.Extra[t.Name+"_version"] = v
			}
		}
	}
	return e
}

func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}
