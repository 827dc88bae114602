package labvm

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner/qemu"
)

// TestLabPerfStress is the reproducer of the lab soft lockup in perf: a
// lab VM attaches and detaches `perf stat -t` on flooding kpktgend threads
// (and the nested guest's vhost worker) in a loop. Opt-in, minutes per
// run; the knobs are environment variables:
//
//	VNETBENCH_PERFSTRESS=1                  enable
//	VNETBENCH_PERFSTRESS_ORDER=during       during | after-start | around (PerfDuring...)
//	VNETBENCH_PERFSTRESS_ITER=100           perf sessions
//	VNETBENCH_PERFSTRESS_CPUS=2             lab vCPUs
//	VNETBENCH_PERFSTRESS_TCG=               TCG threading: "", single, multi
//	VNETBENCH_PERFSTRESS_GUEST=             "" (the test reads the tap) | tap | tap+vhost (nested guest)
//	VNETBENCH_PERFSTRESS_THREADS=1          pktgen threads
//	VNETBENCH_PERFSTRESS_HOLD=300ms         pktgen run per session
//	VNETBENCH_PERFSTRESS_KEEP=init          who holds the perf static keys on (perfkeys): init = lab
//	                                        init for the lab's life (the fix), run = the stress itself
//	                                        (released at its end, as runner.Run does), 0 = nobody
//	VNETBENCH_PERFSTRESS_QEMU=              extra QEMU arguments, space-separated (e.g. a -monitor)
//
// It fails when the lab kernel reports a lockup or stall on its console
// (within qemu.FaultGrace of the report) or a perf does not exit.
func TestLabPerfStress(t *testing.T) {
	testenv.OptIn(t, "VNETBENCH_PERFSTRESS", "the lockup reproducer, minutes per run: VNETBENCH_PERFSTRESS=1 go test -run TestLabPerfStress -timeout 60m -v ./runner/labvm")
	needLab(t)
	bin := vnetbenchBinary(t)
	fetchKernel(t, e2eLabKernel)
	env := func(k, def string) string {
		if v := os.Getenv("VNETBENCH_PERFSTRESS_" + k); v != "" {
			return v
		}
		return def
	}
	cpus, _ := strconv.Atoi(env("CPUS", "2"))
	run := t.TempDir()
	out := filepath.Join(run, "lab", "stress", "perfstress")
	args := []string{"lab-selftest", "-o", out, "--perf-stress", env("ITER", "100"), "--perf-order", env("ORDER", PerfDuring),
		"--perf-threads", env("THREADS", "1"), "--perf-hold", env("HOLD", "300ms")}
	keep := env("KEEP", "init")
	if keep == "run" {
		args = append(args, "--perf-keep")
	}
	if g := env("GUEST", ""); g != "" {
		k := fetchKernel(t, e2eGuestKernel)
		args = append(args, "--perf-guest", g, "--guest-kernel", k.Image, "--guest-modules", k.Modules)
	}
	start := time.Now()
	res, err := Run(t.Context(), Config{
		Label: "stress", Kernel: Kernel{Debian: e2eLabKernel}, RunDir: run, Binary: bin, Args: args,
		CPUs: cpus, TCGThread: env("TCG", ""), NoPerfKeys: keep != "init", QEMUExtra: strings.Fields(env("QEMU", "")), Output: testLog{t},
		Timeouts: Timeouts{Run: 50 * time.Minute},
	})
	t.Logf("lab: %.0fs", time.Since(start).Seconds())
	if b, rerr := os.ReadFile(filepath.Join(out, "perfstress.json")); rerr == nil {
		var r PerfStressResult
		json.Unmarshal(b, &r)
		t.Logf("perfstress.json: %s", b)
	}
	var fe *qemu.FaultError
	if errors.As(err, &fe) {
		b, _ := os.ReadFile(filepath.Join(run, "lab", "stress", "console.log"))
		os.WriteFile(filepath.Join(os.TempDir(), "vnb-perfstress-fault-"+strconv.FormatInt(time.Now().Unix(), 10)+".log"), b, 0o644)
		t.Fatalf("LOCKUP: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = res
}
