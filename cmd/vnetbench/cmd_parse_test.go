package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/golden"
	"github.com/vnetbench/vnetbench/perfparse"
)

func parseGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.File(t, path, got)
}

// runParse runs "vnetbench parse args..." in-process and renders what a
// user sees.
func runParse(t *testing.T, stdin string, args ...string) ([]byte, int) {
	t.Helper()
	cl := testCLI()
	cl.stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	err := cl.run(t.Context(), append([]string{"parse"}, args...), &out, &errb)
	code := exitCode(err)
	var b bytes.Buffer
	b.WriteString("$ vnetbench parse " + strings.Join(args, " ") + "\n")
	b.WriteString("exit " + string(rune('0'+code)) + "\n")
	b.Write(out.Bytes())
	b.Write(errb.Bytes())
	if err != nil {
		b.WriteString("vnetbench: " + err.Error() + "\n")
	}
	return b.Bytes(), code
}

func TestParseCLIGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"pktgen-nocarrier", []string{"pktgen", "testdata/parse/pktgen-nocarrier.txt"}, 0},
		{"auto-perf-stat-mail-de", []string{"auto", "testdata/parse/perf-stat-mail-de.txt"}, 0},
		{"perf-stat-ambiguous", []string{"perf-stat", "testdata/parse/perf-stat-ambiguous.txt"}, 2},
		{"auto-iperf3-udp", []string{"auto", "testdata/parse/iperf3-udp.json"}, 0},
		{"trafgen-2cpu", []string{"trafgen", "testdata/parse/trafgen-2cpu.txt"}, 0},
		{"netdev-sys-dir", []string{"netdev", "testdata/parse/netdev-sys-tap"}, 0},
		{"tc-tbf", []string{"tc", "testdata/parse/tc-tbf.json"}, 0},
		{"auto-perf-report", []string{"auto", "testdata/parse/perf-report-g-head.txt"}, 0},
		{"kpktgend", []string{"kpktgend", "testdata/parse/kpktgend.txt"}, 0},
		{"testpmd-interactive", []string{"testpmd", "testdata/parse/testpmd-interactive.txt"}, 0},
		{"testpmd-failed", []string{"testpmd", "testdata/parse/testpmd-queue-count-2.txt"}, 2},
		{"unknown-kind", []string{"nosuch", "x"}, 2},
		{"wrong-kind", []string{"iperf3", "testdata/parse/pktgen-nocarrier.txt"}, 2},
		{"missing-file", []string{"pktgen", "testdata/parse/nosuch.txt"}, 2},
		{"no-args", nil, 2},
		// A second IMIX run's bytes from the counts' growth since the
		// first run's file; the files the wrong way round, and a kind
		// that is not pktgen, are refused.
		{"pktgen-imix-before", []string{"--imix-before", "testdata/parse/pktgen-imix-run1.txt", "pktgen", "testdata/parse/pktgen-imix-run2.txt"}, 0},
		{"pktgen-imix-before-swapped", []string{"--imix-before", "testdata/parse/pktgen-imix-run2.txt", "pktgen", "testdata/parse/pktgen-imix-run1.txt"}, 2},
		{"imix-before-not-pktgen", []string{"--imix-before", "testdata/parse/pktgen-imix-run1.txt", "iperf3", "testdata/parse/iperf3-udp.json"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, code := runParse(t, "", tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s", code, tc.code, got)
			}
			parseGolden(t, filepath.Join("testdata", "parse", tc.name+".golden"), got)
		})
	}
}

// auto on a directory that is not /sys/class/net/DEV/statistics (a run's
// artifacts/CELL/KERNEL/REP/warmup, say) said only that the first file
// held no count: the line says what auto took the directory for.
func TestParseAutoOtherDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "trafgen.cfg"), []byte("{ eth(da=52:54:00:12:34:56) }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, code := runParse(t, "", "auto", dir)
	want := "vnetbench: parse: " + dir + " is a directory, and auto reads a directory only as /sys/class/net/DEV/statistics, which it is not ("
	if code != 2 || !bytes.Contains(got, []byte(want)) || !bytes.HasSuffix(got, []byte("); give a file\n")) {
		t.Errorf("exit %d, want 2 and %q...:\n%s", code, want, got)
	}
}

func TestParseCLIStdin(t *testing.T) {
	in, err := os.ReadFile("testdata/parse/pktgen-nocarrier.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"pktgen", "-"}, {"pktgen"}, {"auto", "-"}} {
		got, code := runParse(t, string(in), args...)
		if code != 0 || !bytes.Contains(got, []byte(`"frags": -1`)) {
			t.Errorf("%v: exit %d\n%s", args, code, got)
		}
	}
	got, code := runParse(t, "Params: count 1\nResult: OK: 1(c1+d0) usec, 1 (60byte,0frags)\n", "pktgen", "-")
	if code != 2 || !bytes.Contains(got, []byte("perfparse: <stdin>:2: ")) {
		t.Errorf("bad stdin: exit %d\n%s", code, got)
	}
}

// TestParseCLIBinary runs the built binary: JSON on stdout, exit 2 and a
// file:line error on bad input.
func TestParseCLIBinary(t *testing.T) {
	bin := os.Getenv("VNETBENCH_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "vnetbench")
		cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	cmd := exec.CommandContext(t.Context(), bin, "parse", "iperf3", "testdata/parse/iperf3-udp.json")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("parse iperf3: %v", err)
	}
	var rec struct {
		Protocol           string  `json:"protocol"`
		ReceiverBitsPerSec float64 `json:"receiver_bits_per_sec"`
	}
	if err := json.Unmarshal(out, &rec); err != nil || rec.Protocol != "UDP" || rec.ReceiverBitsPerSec <= 0 {
		t.Errorf("got %+v, %v from %s", rec, err, out)
	}
	cmd = exec.CommandContext(t.Context(), bin, "parse", "perf-stat", "-")
	cmd.Stdin = strings.NewReader("  1.234 msec task-clock\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "<stdin>:1: ") {
		t.Errorf("ambiguous input: err %v, stderr %q", err, stderr.String())
	}
}

// The streamed perf report JSON is byte for byte what the whole-report
// parser gives.
func TestParseCLIPerfReportStream(t *testing.T) {
	files, err := filepath.Glob("../../perfparse/testdata/perf-report/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatal(err, files)
	}
	for _, f := range append(files, "testdata/parse/perf-report-g-head.txt") {
		if strings.HasPrefix(filepath.Base(f), "bad-") {
			continue // inputs that must fail (perfparse's TestGolden)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := perfparse.ParsePerfReport(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var want, got bytes.Buffer
		if err := writeJSON(&want, rep); err != nil {
			t.Fatal(err)
		}
		if err := streamPerfReport(&got, f, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want.Bytes(), got.Bytes()) {
			t.Errorf("%s: streamed JSON differs from ParsePerfReport's", f)
		}
	}
	var got bytes.Buffer
	err = streamPerfReport(&got, "h.txt", strings.NewReader("# Samples: 0 of event 'cycles'\n# Event count (approx.): 0\n"))
	if err != nil || !strings.Contains(got.String(), `"rows": []`) {
		t.Errorf("header-only report: %v\n%s", err, got.String())
	}
	if err := streamPerfReport(&got, "e.txt", strings.NewReader("")); err == nil || !strings.Contains(err.Error(), "e.txt: perf report: no rows") {
		t.Errorf("empty report: %v", err)
	}
}
