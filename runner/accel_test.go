package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner/internal/fakeqemu"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// qemuRouter starts QEMU with a fake (fakeqemu: QMP with query-kvm
// answering by -accel) and every other program for real.
type qemuRouter struct{ fake *fakeqemu.Exec }

func (e qemuRouter) Run(ctx context.Context, c proc.Cmd) ([]byte, error) {
	return proc.Real{}.Run(ctx, c)
}

func (e qemuRouter) Start(ctx context.Context, c proc.Cmd) (proc.Process, error) {
	if len(c.Argv) > 0 && c.Argv[0] == qemu.DefaultBinary {
		return e.fake.Start(ctx, c)
	}
	return proc.Real{}.Start(ctx, c)
}

const accelScenario = `
name: accel
backend: tap
guest: {vcpus: 1, memory: 128MiB, accel: %s}
generator:
  trafgen: {duration: 1s}
repetitions: 1
timeouts: {boot: 20s, teardown: 10s}
`

// argvAccel returns -accel's and -cpu's values and -append of a QEMU argv.
func argvAccel(argv []string) (accel, cpu, appendArg string) {
	for i := 0; i+1 < len(argv); i++ {
		switch argv[i] {
		case "-accel":
			accel = argv[i+1]
		case "-cpu":
			cpu = argv[i+1]
		case "-append":
			appendArg = argv[i+1]
		}
	}
	return accel, cpu, appendArg
}

// TestRunAccel runs cells with a fake QEMU on described hosts: the
// accelerator guest.accel asks for reaches QEMU's argv (with the guest
// kernel command line chosen for it), the samples and env.json say which
// one ran; kvm on a host without usable KVM fails with a capability error
// before anything starts; auto falls back to TCG with a warning when the
// probe fails, and when QEMU cannot start KVM although the probe could.
func TestRunAccel(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces, tap")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
	kvmHost := qemu.KVMStatus{Usable: true, Flag: "vmx", Vendor: qemu.ModuleKVMIntel, Nested: "Y"}
	pvmHost := qemu.KVMStatus{Flag: "vmx", Vendor: qemu.ModuleKVMIntel, Why: "a test vCPU did not run on /dev/kvm: KVM_RUN: internal error (KVM_EXIT_INTERNAL_ERROR)"}
	for _, tc := range []struct {
		name      string
		accel     string
		host      qemu.KVMStatus
		qemuNoKVM bool
		argv      []string // -accel and -cpu of each QEMU started
		emulated  bool
		warn      string // in the summary's or the sample's warnings
	}{
		{"tcg on a KVM host", "tcg", kvmHost, false, []string{"tcg max"}, true, ""},
		{"auto on a KVM host", "auto", kvmHost, false, []string{"kvm host"}, false, ""},
		{"kvm on a KVM host", "kvm", kvmHost, false, []string{"kvm host"}, false, ""},
		{"auto where the probe fails", "auto", pvmHost, false, []string{"tcg max"}, true, "KVM is not usable (a test vCPU did not run"},
		{"auto where QEMU cannot start KVM", "auto", kvmHost, true, []string{"kvm host", "tcg max"}, true, "KVM did not start this guest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			fake := &fakeqemu.Exec{Script: func(string) []fakeqemu.Step { return nil }, NoKVM: tc.qemuNoKVM}
			h.opts.Exec = qemuRouter{fake}
			h.opts.KVM = &tc.host
			h.opts.Image = func(context.Context, scenarios.Guest, GuestContents) (*GuestImage, error) {
				return &GuestImage{Kernel: "/fake/vmlinuz", Initrd: "/fake/initramfs"}, nil // -append needs -kernel
			}
			cells := loadCells(t, fmt.Sprintf(accelScenario, tc.accel))
			sum, err := Run(t.Context(), cells, h.opts)
			checkNothingLeft(t, sum)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range fake.Procs() {
				a, cpu, app := argvAccel(p.Argv)
				got = append(got, a+" "+cpu)
				tcgTuned := strings.Contains(app, vmimages.TCGCmdline)
				if tcgTuned != (a == "tcg") {
					t.Errorf("-accel %s with -append %q: the TCG tuning must come with TCG only", a, app)
				}
			}
			if !slices.Equal(got, tc.argv) {
				t.Errorf("QEMU started with %q, want %q", got, tc.argv)
			}
			samples := readSamples(t, h.opts.Dir)
			if len(samples) != 1 {
				t.Fatalf("%d samples", len(samples))
			}
			s := samples[0]
			wantAccel := strings.Fields(tc.argv[len(tc.argv)-1])[0]
			if s.Emulated != tc.emulated || s.Labels["accel"] != wantAccel {
				t.Errorf("sample emulated %v accel %q, want %v %q", s.Emulated, s.Labels["accel"], tc.emulated, wantAccel)
			}
			warnings := strings.Join(append(sum.Warnings, s.Warnings...), "\n")
			if tc.warn != "" && !strings.Contains(warnings, tc.warn) {
				t.Errorf("warnings %q lack %q", warnings, tc.warn)
			}
			if tc.warn == "" && strings.Contains(warnings, "KVM") {
				t.Errorf("unexpected KVM warning: %q", warnings)
			}
			env, err := results.ReadEnv(h.opts.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(env.GuestCmdline) != 1 {
				t.Errorf("env.json guest_cmdline %q, want the one command line booted", env.GuestCmdline)
			} else if _, _, app := argvAccel(fake.Procs()[len(fake.Procs())-1].Argv); env.GuestCmdline[0] != app {
				t.Errorf("env.json guest_cmdline %q, want %q", env.GuestCmdline[0], app)
			}
			repro := readFile(t, filepath.Join(h.opts.Dir, results.ReproduceFile))
			if !strings.Contains(repro, "-accel "+strings.Replace(tc.argv[len(tc.argv)-1], " ", " -cpu ", 1)) {
				t.Errorf("reproduce.sh lacks the accelerator used:\n%s", repro)
			}
		})
	}

	// kvm where KVM does not work: exit 2 before anything starts, no
	// run directory.
	h := newHarness(t)
	fake := &fakeqemu.Exec{Script: func(string) []fakeqemu.Step { return nil }}
	h.opts.Exec = qemuRouter{fake}
	h.opts.KVM = &pvmHost
	sum, err := Run(t.Context(), loadCells(t, fmt.Sprintf(accelScenario, "kvm")), h.opts)
	if !errors.Is(err, fault.ErrCapability) || !strings.Contains(err.Error(), "KVM_EXIT_INTERNAL_ERROR") || !strings.Contains(err.Error(), "accel: auto or tcg") {
		t.Errorf("kvm on a PVM-style host: err = %v, want a capability error with the probe's reason and the fix", err)
	}
	if sum != nil || len(fake.Procs()) != 0 {
		t.Errorf("something started: summary %+v, %d QEMUs", sum, len(fake.Procs()))
	}
	if _, serr := os.Stat(h.opts.Dir); serr == nil {
		t.Errorf("run directory %s created for a refused run", h.opts.Dir)
	}
}
