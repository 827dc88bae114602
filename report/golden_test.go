package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/golden"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
)

// checkGolden compares got with testdata/golden/name (rewritten with
// -update).
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.File(t, filepath.Join("testdata", "golden", name), got)
}

// run returns the fixture run directories by name: a real capture under
// testdata/real, else a generated one under testdata/generated (see
// testdata/README.md).
func run(dirs ...string) []string {
	out := make([]string, len(dirs))
	for i, d := range dirs {
		out[i] = filepath.Join("testdata", "generated", d)
		if p := filepath.Join("testdata", "real", d); isDir(p) {
			out[i] = p
		}
	}
	return out
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func TestRenderGolden(t *testing.T) {
	cases := []struct {
		name   string
		dirs   []string
		format string
		style  Style
		opt    Options
	}{
		{"thread.txt", run("stock", "patched"), "text", ASCII, Options{}},
		{"thread-unicode.txt", run("stock", "patched"), "text", Unicode, Options{}},
		{"thread.md", run("stock", "patched"), "markdown", ASCII, Options{}},
		{"thread.csv", run("stock", "patched"), "csv", ASCII, Options{}},
		{"thread.json", run("stock", "patched"), "json", ASCII, Options{}},
		{"thread.bench", run("stock", "patched"), "benchfmt", ASCII, Options{}},
		{"thread.html", run("stock", "patched"), "html", ASCII, Options{}},
		{"iperf3-tcg.txt", run("iperf3-tcg"), "text", ASCII, Options{}},
		{"iperf3-tcg.md", run("iperf3-tcg"), "markdown", ASCII, Options{}},
		{"iperf3-tcg.csv", run("iperf3-tcg"), "csv", ASCII, Options{}},
		{"iperf3-tcg.bench", run("iperf3-tcg"), "benchfmt", ASCII, Options{}},
		{"iperf3-tcg.html", run("iperf3-tcg"), "html", ASCII, Options{}},
		{"sweep.txt", run("sweep"), "text", ASCII, Options{Metrics: []string{"tx_pps"}}},
		{"sweep.md", run("sweep"), "markdown", ASCII, Options{Metrics: []string{"tx_pps"}}},
		{"by-backend.txt", run("stock", "patched"), "text", ASCII, Options{By: "backend", Metrics: []string{"tx_pps"}, Kinds: []string{KindCompare}}},
		{"by-backend-thread.txt", run("stock", "patched"), "text", ASCII, Options{By: "backend", Kinds: []string{KindThread}}},
		{"single.txt", run("stock"), "text", ASCII, Options{Metrics: []string{"tx_pps", "lost_pps"}}},
		// --details: the per-metric tables (median and min..max for n < 6)
		// and the harness and diagnostics table.
		{"single-details.txt", run("stock"), "text", ASCII, Options{Metrics: []string{"tx_pps", "lost_pps", "tap_tx_pps"}, Details: true}},
		// A real run of the quickstart scenario by the runner on a CI-kind
		// machine (QEMU TCG, trafgen and iperf3, perf stat on qemu).
		{"quickstart-tcg.txt", run("quickstart-tcg"), "text", ASCII, Options{}},
		{"quickstart-tcg-details.txt", run("quickstart-tcg"), "text", ASCII, Options{Details: true}},
		{"quickstart-tcg-details.md", run("quickstart-tcg"), "markdown", ASCII, Options{Details: true}},
		{"quickstart-tcg.json", run("quickstart-tcg"), "json", ASCII, Options{}},
		// A real lab run by the runner: the lab pktgen e2e (linux-source-6.1
		// stock vs patched with the tun backpressure patch, TCG in TCG).
		{"lab-pktgen-tcg.txt", run("lab-pktgen-tcg"), "text", ASCII, Options{}},
		{"lab-pktgen-tcg.md", run("lab-pktgen-tcg"), "markdown", ASCII, Options{Kinds: []string{KindThread}}},
		{"lab-pktgen-3run-tcg.txt", run("lab-pktgen-3run-tcg"), "text", ASCII, Options{}},
		{"lab-pktgen-3run-tcg.md", run("lab-pktgen-3run-tcg"), "markdown", ASCII, Options{Kinds: []string{KindThread}}},
		// --by backend of that run: TAP has no pin.vhost, TAP+vhost-net
		// pins it to CPU 0 in every cell; the rows pair all the same.
		{"lab-pktgen-3run-tcg-by-backend.txt", run("lab-pktgen-3run-tcg"), "text", ASCII, Options{By: "backend", Kinds: []string{KindThread}}},
		// pktgen through fq_codel (queue_xmit): drops in the qdisc get a
		// "Qdisc drops" row in the tables where some run had them.
		{"qdisc.txt", run("qdisc-stock", "qdisc-patched"), "text", ASCII, Options{}},
		{"qdisc.md", run("qdisc-stock", "qdisc-patched"), "markdown", ASCII, Options{Kinds: []string{KindThread}}},
		{"qdisc.csv", run("qdisc-stock", "qdisc-patched"), "csv", ASCII, Options{}},
		{"qdisc.bench", run("qdisc-stock", "qdisc-patched"), "benchfmt", ASCII, Options{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set, err := results.Load(c.dirs...)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Build(set, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := Render(&buf, set, r, c.format, c.style); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, c.name, buf.Bytes())
		})
	}
}

// The thread-style tables are what people paste to netdev: ASCII only,
// within 72 columns, one column per kernel, TAP and TAP + vhost-net
// groups with Transmitted and Lost, per-thread and total labeled.
func TestThreadTableShape(t *testing.T) {
	_, r := built(t, Options{Kinds: []string{KindThread}}, "stock", "patched")
	var buf bytes.Buffer
	if err := WriteText(&buf, r, ASCII); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for i, l := range strings.Split(out, "\n") {
		if len(l) > MaxWidth {
			t.Errorf("line %d is %d columns (> %d): %q", i+1, len(l), MaxWidth, l)
		}
		for _, r := range l {
			if r > 127 {
				t.Errorf("line %d has non-ASCII %q: %q", i+1, r, l)
				break
			}
		}
	}
	for _, want := range []string{"| TAP ", "| vhost-net ", "| Transmitted ", "| Lost ", "| Tx total ", "| Tx per thread ",
		"stock |", "patched |",
		"|  453 Kpps |  569 Kpps |  +25.64% |", "| 1.16 Mpps |     1 pps | -100.00% |", "|  962 Kpps | 1.01 Mpps |   +5.30% |"} {
		if !strings.Contains(out, want) {
			t.Errorf("thread table lacks %q:\n%s", want, out)
		}
	}
	if n := len(r.Tables); n != 2 {
		t.Fatalf("%d thread tables, want 2 (1 and 4 threads)", n)
	}
	for i, threads := range []string{"1 thread,", "4 threads,"} {
		for _, want := range []string{"Core i5-6300HQ", "10M packets", threads, "vhost pinned to CPU 0", "qdisc fq_codel"} {
			if ctx := r.Tables[i].Context; !strings.Contains(ctx, want) {
				t.Errorf("table %d context %q lacks %q", i, ctx, want)
			}
		}
	}
}

// A real lab run keeps the thread's layout (issue 13): one thread-style
// table per pktgen mode and thread count, with TAP and TAP + vhost-net rows
// and stock and patched columns, although pin.vhost exists for the vhost
// backend only and the run also holds n/a AF_XDP cells; the context names
// what the rows share. Its Lost rows show what the patch did.
func TestRealLabThreadTables(t *testing.T) {
	_, r := built(t, Options{Kinds: []string{KindThread}}, "lab-pktgen-tcg")
	seen := map[string]int{}
	lostRows := 0
	for _, tb := range r.Tables {
		if strings.Join(tb.Header, ",") != "stock,patched,change, 1 run" { // the marks every column shares are in the notes
			t.Errorf("table %q: header %q, want stock and patched columns and the change of 1 run", tb.Context, tb.Header)
		}
		for _, want := range []string{"vhost pinned to CPU 0", "qdisc fq_codel", "3s", "60 B packets", "TCG"} {
			if !strings.Contains(tb.Context, want) {
				t.Errorf("context %q lacks %q", tb.Context, want)
			}
		}
		var mode, threads string
		for _, m := range []string{"simple", "multiqueue", "script"} {
			if strings.HasSuffix(tb.Context, "mode "+m) {
				mode = m
			}
		}
		switch {
		case strings.Contains(tb.Context, " 1 thread,"):
			threads = "1"
		case strings.Contains(tb.Context, " 4 threads,"):
			threads = "4"
		}
		seen[mode+" "+threads]++
		groups := map[string]bool{}
		for _, row := range tb.Rows {
			groups[row.Labels[0]] = true
			if lost := row.Labels[1]; lost == "Lost" || lost == "Lost total" {
				lostRows++
				st, pa := row.Cells[0].Value, row.Cells[1].Value
				if st == nil || pa == nil || *st < 1000 || *pa != 0 {
					t.Errorf("%s %s, %s: Lost %s vs %s, want stock thousands of pps and patched 0", tb.Context, row.Labels[0], lost, row.Cells[0].Text, row.Cells[1].Text)
				}
			}
		}
		if len(groups) != 2 || !groups["TAP"] || !groups["TAP + vhost-net"] {
			t.Errorf("table %q: row groups %v, want TAP and TAP + vhost-net", tb.Context, groups)
		}
	}
	if lostRows != 8 {
		t.Errorf("%d Lost rows, want 8 (4 tables, 2 backends)", lostRows)
	}
	want := map[string]int{"simple 1": 1, "multiqueue 4": 1, "script 1": 1, "script 4": 1}
	if !maps.Equal(seen, want) {
		t.Errorf("thread tables by mode and threads: %v, want %v", seen, want)
	}
}

// Every renderer marks emulated (TCG) results.
func TestEmulatedMarked(t *testing.T) {
	set, r := built(t, Options{Origin: "vnb"}, "iperf3-tcg")
	marks := map[string]string{"text": "EMULATED", "markdown": "EMULATED", "html": "EMULATED", "csv": ",true,", "json": `"emulated": true`, "benchfmt": "accel: tcg",
		"junit": "EMULATED", "kcidb": `"emulated": true`, "lava": "# EMULATED"}
	for _, f := range Formats {
		var buf bytes.Buffer
		if err := Render(&buf, set, r, f, ASCII); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), marks[f]) {
			t.Errorf("%s output does not mark emulation with %q", f, marks[f])
		}
	}
}

func TestHTMLSelfContained(t *testing.T) {
	_, r := built(t, Options{}, "stock", "patched")
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, bad := range []string{"<script", "<link", "@import", "@font-face", "src=", "url("} {
		if strings.Contains(out, bad) {
			t.Errorf("HTML contains %q: not self-contained", bad)
		}
	}
	if n := strings.Count(out, "<svg"); n < 3 {
		t.Errorf("%d SVG charts, want one per metric (>= 3)", n)
	}
	for rest := out; ; {
		i := strings.Index(rest, "<svg")
		if i < 0 {
			break
		}
		j := strings.Index(rest, "</svg>")
		dec := xml.NewDecoder(strings.NewReader(rest[i : j+len("</svg>")]))
		for {
			if _, err := dec.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("SVG is not well-formed XML: %v", err)
			}
		}
		rest = rest[j+1:]
	}
	if !strings.Contains(out, "error bars") {
		t.Error("HTML charts do not explain their error bars")
	}
}

// built loads testdata runs and builds their report with opt.
func built(tb testing.TB, opt Options, dirs ...string) (*results.Set, *Report) {
	tb.Helper()
	set, err := results.Load(run(dirs...)...)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := Build(set, opt)
	if err != nil {
		tb.Fatal(err)
	}
	return set, r
}

// The generated fixture runs are what their program writes: nobody edited
// them by hand, and a change to the program (or to runner.NetMetrics and AddResult,
// which computes the qdisc sets' metrics) shows up here.
func TestGeneratedFixturesUpToDate(t *testing.T) {
	gobin := testenv.NeedCommand(t, "go", "")
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), gobin, "run", "./report/testdata/gen", "-o", dir)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./report/testdata/gen: %v\n%s", err, out)
	}
	var n int
	err := filepath.WalkDir("testdata/generated", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("testdata/generated", p)
		want, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Errorf("%s is not written by the generator (move it to testdata/real or testdata/handwritten): %v", p, err)
			return nil
		}
		if got, _ := os.ReadFile(p); !bytes.Equal(got, want) {
			t.Errorf("%s differs from what go run ./report/testdata/gen writes; run it (from the repository root) and commit the result", p)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			if _, err := os.Stat(filepath.Join("testdata/generated", rel)); err != nil {
				t.Errorf("the generator writes %s, which is not checked in", rel)
			}
		}
		return nil
	})
	if n == 0 {
		t.Error("no generated fixtures")
	}
}

// README's lab table is this capture's (the built-in lab-pktgen, 3 runs a
// cell, run from an empty cache): every Lost total is thousands of pps on
// stock and 0 on patched; a change is called where stock's runs agree well
// enough for 3 runs (TAP + vhost-net: 254-432 Kpps) and left UNKNOWN where
// they spread 318-769 Kpps (TAP): -100% is not by itself far outside the
// noise at n = 3 (docs/compare.md's early looks).
func TestReal3RunLabLost(t *testing.T) {
	_, r := built(t, Options{Kinds: []string{KindThread}}, "lab-pktgen-3run-tcg")
	want := map[string]string{"TAP": "? -100.00%", "TAP + vhost-net": "-100.00%"}
	got := map[string]string{}
	for _, tb := range r.Tables {
		for _, row := range tb.Rows {
			if row.Labels[1] != "Lost total" {
				continue
			}
			st, pa := row.Cells[0].Value, row.Cells[1].Value
			if st == nil || pa == nil || *st < 1000 || *pa != 0 {
				t.Errorf("%s: Lost %s vs %s, want stock thousands of pps and patched 0", row.Labels[0], row.Cells[0].Text, row.Cells[1].Text)
			}
			got[row.Labels[0]] = strings.TrimSpace(row.Cells[2].Text)
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("Lost total changes %v, want %v", got, want)
	}
}

// Every table of a report with an emulated column says so, in the
// table's own notes: a table is quoted alone. With some columns
// emulated, a table whose header has no "(TCG)" mark (perf stat's) names
// them.
func TestEveryTableSaysEmulation(t *testing.T) {
	for _, dirs := range [][]string{{"iperf3-tcg"}, {"stock", "iperf3-tcg"}} {
		_, r := built(t, Options{Details: true}, dirs...)
		if len(r.Tables) < 2 {
			t.Fatalf("%v: %d tables, want several", dirs, len(r.Tables))
		}
		for _, tb := range r.Tables {
			if !slices.ContainsFunc(tb.Notes, func(n string) bool { return strings.Contains(n, "QEMU") && strings.Contains(n, "TCG") }) {
				t.Errorf("%v: table %q (%s) does not say its numbers were measured under emulation: %q", dirs, tb.Title, tb.Kind, tb.Notes)
			}
		}
	}
	_, r := built(t, Options{}, "stock", "patched")
	for _, tb := range r.Tables {
		if slices.ContainsFunc(tb.Notes, func(n string) bool { return strings.Contains(n, "TCG") }) {
			t.Errorf("table %q of runs under KVM speaks of TCG: %q", tb.Title, tb.Notes)
		}
	}
}
