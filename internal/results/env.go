package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// Env describes where a run was measured: env.json. The runner fills it;
// report only stores and prints it.
type Env struct {
	Run           string    `json:"run,omitempty"`
	Created       time.Time `json:"created,omitempty"`
	Version       string    `json:"version,omitempty"`  // vnetbench version
	Scenario      string    `json:"scenario,omitempty"` // scenario name
	Seed          int64     `json:"seed,omitempty"`     // cell order seed
	Hostname      string    `json:"hostname,omitempty"`
	KernelRelease string    `json:"kernel_release,omitempty"` // uname -r
	Cmdline       string    `json:"cmdline,omitempty"`        // /proc/cmdline
	// Mitigations maps a /sys/devices/system/cpu/vulnerabilities entry to
	// its text ("spectre_v2": "Mitigation: ...").
	Mitigations   map[string]string `json:"mitigations,omitempty"`
	CPUModel      string            `json:"cpu_model,omitempty"`
	CPUs          int               `json:"cpus,omitempty"`
	Governor      string            `json:"governor,omitempty"` // scaling governor, "" when unknown
	SMT           string            `json:"smt,omitempty"`      // /sys/devices/system/cpu/smt/control
	QEMUVersion   string            `json:"qemu_version,omitempty"`
	PerfVersion   string            `json:"perf_version,omitempty"`
	Iperf3Version string            `json:"iperf3_version,omitempty"`
	Accel         string            `json:"accel,omitempty"` // "kvm" or "tcg"
	// Kernels holds the environment seen under each kernel label when it
	// differs from the host's (lab mode: each kernel runs in its own VM).
	Kernels map[string]*Env `json:"kernels,omitempty"`
	// Extra holds facts without a field of their own.
	Extra map[string]string `json:"extra,omitempty"`
}

// Emulated reports whether the environment ran guests without hardware
// acceleration.
func (e *Env) Emulated() bool { return e != nil && e.Accel == "tcg" }

// WriteEnv writes env.json in dir atomically (temporary file + rename).
func WriteEnv(dir string, env Env) error {
	b, err := json.MarshalIndent(&env, "", "  ")
	if err != nil {
		return fmt.Errorf("encode env: %w", err)
	}
	b = append(b, '\n')
	tmp := filepath.Join(dir, EnvFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write env: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, EnvFile)); err != nil {
		return fmt.Errorf("write env: %w", err)
	}
	return nil
}

// ReadEnv reads dir's env.json. A missing file gives a zero Env and no
// error.
func ReadEnv(dir string) (*Env, error) {
	b, err := os.ReadFile(filepath.Join(dir, EnvFile))
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
