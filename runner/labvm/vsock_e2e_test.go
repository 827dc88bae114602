package labvm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/scenarios"
)

// TestLabVsockE2E is the vsock sockmap series' acceptance test and the
// 6.12 lab boot test in one lab boot: the built-in vsock-sockmap in
// miniature (one repetition of each redirector, 3 s each). The lab VM
// runs Debian's 6.12 generic kernel (bookworm-security, "+deb12" release,
// every module .ko.xz: the initramfs carries them decompressed), loads
// vhost_vsock and runs the counting server; inside it a 6.12 guest with
// vhost-vsock-pci (CID 3) runs the sender and the socat or sockmap
// redirector, which reach the server at CID 2 over the virtio transport.
// Both cells share one nested guest boot. `vnetbench run` must print the
// table (socat and sockmap in MB/s, the change), both cells must have
// moved data, and env.json must record the lab kernel's release. Under
// TCG on the loaded 2-core machine the lab VM was ready in about 100 s and
// the nested guest up 156 s later. Run alone with
//
//	make e2e RUN=TestLabVsockE2E PKG=./runner/labvm
func TestLabVsockE2E(t *testing.T) {
	needLab(t)
	testenv.NeedCommand(t, "socat", "socat")
	bin := vnetbenchBinary(t)
	lk := fetchKernel(t, "6.12-amd64")
	fetchKernel(t, "6.12")
	b, ok := scenarios.BuiltinData("vsock-sockmap")
	if !ok {
		t.Fatal("no built-in vsock-sockmap")
	}
	src := string(b)
	for _, r := range [][2]string{{"repetitions: 3", "repetitions: 1"}, {"duration: 10s", "duration: 3s"}, {"name: vsock-sockmap", "name: vsock-sockmap-e2e"}} {
		if !strings.Contains(src, r[0]) {
			t.Fatalf("built-in vsock-sockmap has no %q", r[0])
		}
		src = strings.Replace(src, r[0], r[1], 1)
	}
	tmp := t.TempDir()
	scen := filepath.Join(tmp, "vsock-sockmap-e2e.yaml")
	if err := os.WriteFile(scen, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	o, err := runVnetbench(t, "run vsock-sockmap-e2e", 60, bin, "run", scen, "-o", dir, "--seed", "1", "--lock-wait", "60m")
	if err != nil {
		logConsoles(t, dir)
		t.Fatalf("run: %v", err)
	}
	for _, want := range []string{"socat |", "sockmap |", " change", "| 64 ", "| KiB ", " MB/s ", "Redirector CPU"} {
		if !strings.Contains(o, want) {
			t.Errorf("the table lacks %q", want)
		}
	}
	// The header cell wraps over lines: read it without the borders.
	flat := strings.Join(strings.Fields(strings.ReplaceAll(o, "|", " ")), " ")
	for _, want := range []string{"1 thread, virtio transport", "kernel 6.12", "+deb12-cloud-amd64"} {
		if !strings.Contains(flat, want) {
			t.Errorf("the table's header lacks %q", want)
		}
	}
	var env struct {
		Kernels map[string]struct {
			KernelRelease string `json:"kernel_release"`
		} `json:"kernels"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "env.json")); err != nil {
		t.Error(err)
	} else if err := json.Unmarshal(b, &env); err != nil {
		t.Errorf("env.json: %v", err)
	} else if rel := env.Kernels["6.12"].KernelRelease; rel != lk.Release || !strings.Contains(rel, "+deb12-amd64") {
		t.Errorf("lab kernel release %q, want %s", rel, lk.Release)
	}
	res, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	type sample struct {
		Cell        string             `json:"cell"`
		Kernel      string             `json:"kernel"`
		Metrics     map[string]float64 `json:"metrics"`
		Unsupported string             `json:"unsupported"`
		Error       string             `json:"error"`
		Warnings    []string           `json:"warnings"`
	}
	cells := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(res)), "\n") {
		var s sample
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("results.jsonl: %v: %s", err, line)
		}
		if s.Kernel != "6.12" || s.Unsupported != "" || s.Error != "" || s.Metrics["throughput_bps"] <= 0 || s.Metrics["redirector_cpu_frac"] <= 0 {
			t.Errorf("%s on %s: %v (n/a: %q, error: %s)", s.Cell, s.Kernel, s.Metrics, s.Unsupported, s.Error)
		}
		for _, w := range s.Warnings {
			if strings.Contains(w, "lost or truncated") {
				t.Errorf("%s: %s", s.Cell, w)
			}
		}
		cells[s.Cell] = true
	}
	if len(cells) != 2 || !cells["tap/vsock-t1/socat"] || !cells["tap/vsock-t1/sockmap"] {
		t.Errorf("cells %v, want socat and sockmap", cells)
	}
	if t.Failed() {
		logConsoles(t, dir)
	}
}

// logConsoles logs the tails of the lab VM's console (and of its first
// lab VM's, when the lab was booted again after a fault under TCG) and of
// the nested guests' consoles (the inner run's artifacts) of the run in
// dir.
func logConsoles(t *testing.T, dir string) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "lab", "*", "run", "artifacts", "console-*.log"))
	labs := []string{filepath.Join(dir, "lab", "6.12", "console-1.log"), filepath.Join(dir, "lab", "6.12", "console.log")}
	for _, p := range append(labs, logs...) {
		if b, err := os.ReadFile(p); err == nil {
			t.Logf("%s, last lines:\n%s", p, tail(strings.TrimSpace(string(b)), 40))
		}
	}
}
