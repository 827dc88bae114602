package report

import (
	"bytes"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func copyRun(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ResultsFile, EnvFile} {
		b, err := os.ReadFile(filepath.Join("testdata", "runs", name, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestLoadJoinsByKernel(t *testing.T) {
	set, err := Load(run("stock", "patched")...)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Kernels(), ","); got != "stock,patched" {
		t.Errorf("kernels %q, want stock,patched", got)
	}
	if n := len(set.Samples); n != 40 {
		t.Errorf("%d samples, want 2 kernels x 4 cells x 5 reps = 40", n)
	}
	if len(set.Warnings) != 0 {
		t.Errorf("warnings: %q", set.Warnings)
	}
	if e := set.Env["patched"]; e == nil || e.Accel != "kvm" {
		t.Errorf("env of patched: %+v", e)
	}
	// Lab mode: one directory, per-kernel envs.
	set, err = Load(run("iperf3-tcg")...)
	if err != nil {
		t.Fatal(err)
	}
	if e := set.Env["patched"]; e == nil || e.KernelRelease != "6.1.0-47-amd64+tun-fc" {
		t.Errorf("per-kernel env of patched: %+v", e)
	}
	if !set.Emulated("stock") {
		t.Error("TCG run not marked emulated")
	}
}

func TestLoadTornLine(t *testing.T) {
	dir := copyRun(t, "stock")
	f, err := os.OpenFile(filepath.Join(dir, ResultsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"schema":1,"run":"thread-stock","cell":"tap/pktg`)
	f.Close()
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Samples) != 20 || len(set.Warnings) != 1 || !strings.Contains(set.Warnings[0], "torn last line") {
		t.Errorf("%d samples, warnings %q; want 20 and one torn-line warning", len(set.Samples), set.Warnings)
	}
	// A bad line in the middle is an error naming file and line.
	b, _ := os.ReadFile(filepath.Join(dir, ResultsFile))
	lines := strings.SplitAfter(string(b), "\n")
	lines[3] = "{oops\n"
	os.WriteFile(filepath.Join(dir, ResultsFile), []byte(strings.Join(lines, "")), 0o644)
	_, err = Load(dir)
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "results.jsonl:4:") || ie.ExitCode() != 2 {
		t.Errorf("Load with a damaged line 4: %v, want an InputError naming results.jsonl:4", err)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, p := range []string{"testdata/runs/nope", "testdata/golden"} {
		_, err := Load(p)
		var ie *InputError
		if !errors.As(err, &ie) {
			t.Errorf("Load(%s) = %v, want an InputError (exit 2)", p, err)
		}
	}
}

func TestLoadBenchfmt(t *testing.T) {
	set, err := Load("testdata/bench/gotest.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Kernels(), ","); got != "stock,patched" {
		t.Errorf("kernels %q", got)
	}
	if got := set.Values("64", "patched", "ns/op"); len(got) != 4 || got[0] != 980 {
		t.Errorf("patched ns/op = %v", got)
	}
	r, err := Build(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, c := range r.Comparisons {
		if c.Metric == "ns/op" {
			found = true
			if c.Verdict != "better" || !c.Delta.Significant {
				t.Errorf("ns/op comparison %+v, want a significant improvement", c)
			}
		}
	}
	if !found {
		t.Error("no ns/op comparison")
	}
}

// Our benchfmt output reads back to the same numbers.
func TestBenchfmtRoundTrip(t *testing.T) {
	set, err := Load(run("stock", "patched")...)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteBenchfmt(&buf, set); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "out.bench")
	os.WriteFile(path, buf.Bytes(), 0o644)
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, cell := range set.Cells() {
		for _, k := range set.Kernels() {
			for _, m := range []string{"tx_pps", "lost_pps", "tx_pps_thread", "perf.cycles@vhost"} {
				a, b := set.Values(cell, k, m), back.Values(cell, k, m)
				if len(a) != len(b) {
					t.Errorf("%s %s %s: %d values, read back %d", cell, k, m, len(a), len(b))
					continue
				}
				for i := range a {
					if math.Abs(a[i]-b[i]) > 1e-9*math.Abs(a[i]) {
						t.Errorf("%s %s %s[%d]: %v, read back %v", cell, k, m, i, a[i], b[i])
					}
				}
			}
		}
	}
}

// benchstat (golang.org/x/perf/cmd/benchstat, required by go.mod) reads
// our benchfmt output and finds the same change.
func TestBenchstatReadsBenchfmt(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found: cannot build benchstat")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "benchstat")
	build := exec.CommandContext(t.Context(), gobin, "build", "-o", bin, "golang.org/x/perf/cmd/benchstat")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build benchstat: %v\n%s", err, out)
	}
	set, err := Load(run("stock", "patched")...)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteBenchfmt(&buf, set); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "results.bench")
	os.WriteFile(in, buf.Bytes(), 0o644)
	out, err := exec.CommandContext(t.Context(), bin, "-col", "kernel", "-filter", ".unit:tx_pps", in).CombinedOutput()
	if err != nil {
		t.Fatalf("benchstat: %v\n%s", err, out)
	}
	got := string(out)
	// Same medians and changes as our own comparison.
	for _, want := range []string{"stock", "patched", "tx_pps", "backend=tap/generator=pktgen-t1", "452.6k", "568.7k", "+25.64%", "p=0.008 n=5"} {
		if !strings.Contains(got, want) {
			t.Errorf("benchstat output lacks %q:\n%s", want, got)
		}
	}
}
