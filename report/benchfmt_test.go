package report

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"golang.org/x/perf/benchfmt"
)

// realRuns are the run directories under testdata/real (real runs).
func realRuns(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", "real", "*", "results.jsonl"))
	if err != nil || len(dirs) < 2 {
		t.Fatalf("real runs under testdata/real: %v %v", dirs, err)
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

// writeBench writes dir's samples in the Go benchmark format to a file.
func writeBench(t *testing.T, dir string) (string, *results.Set) {
	t.Helper()
	set, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Render(&b, set, nil, "benchfmt", ASCII); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), filepath.Base(dir)+".bench")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, set
}

// Every real run goes through benchfmt and back: x/perf's reader (what
// benchstat uses) finds no syntax error and a value on every result line,
// and report reads its own output into the same cells (a run with n/a
// cells once wrote lines without measurements, which report refused).
func TestBenchfmtRoundTrip(t *testing.T) {
	for _, dir := range realRuns(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			p, set := writeBench(t, dir)
			measured, cells := 0, map[string]bool{}
			for _, s := range set.Samples {
				if len(s.Metrics) > 0 {
					measured++
					cells[s.Kernel+"|"+s.Cell] = true
				}
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r := benchfmt.NewReader(f, p)
			n := 0
			for r.Scan() {
				switch rec := r.Result().(type) {
				case *benchfmt.SyntaxError:
					t.Errorf("x/perf benchfmt: %v", rec)
				case *benchfmt.Result:
					n++
					if len(rec.Values) == 0 {
						t.Errorf("%s: result without values", rec.Name.Full())
					}
				}
			}
			if n != measured {
				t.Errorf("%d result lines, want one per measured sample (%d)", n, measured)
			}
			back, err := results.Load(p)
			if err != nil {
				t.Fatalf("report refuses its own benchfmt: %v", err)
			}
			backCells := map[string]bool{}
			for _, s := range back.Samples {
				backCells[s.Kernel+"|"+s.Cell] = true
			}
			if len(back.Samples) != measured || len(backCells) != len(cells) {
				t.Errorf("read back %d samples in %d cells, want %d in %d", len(back.Samples), len(backCells), measured, len(cells))
			}
			if _, err := Build(back, Options{By: "kernel"}); err != nil {
				t.Errorf("report of the read-back file: %v", err)
			}
		})
	}
}

// configLine is a file-level configuration line as benchstat echoes it
// ("generator.pktgen.burst: 0").
var configLine = regexp.MustCompile(`^[A-Za-z][\w./+-]*: `)

// benchstat -col kernel of a real run reads in a terminal: names carry
// only the axes that vary (the constant ones are file-level lines), and
// benchstat says nothing about missing measurements.
func TestBenchstatReadsBenchfmt(t *testing.T) {
	gobin := testenv.NeedCommand(t, "go", "")
	bin := filepath.Join(t.TempDir(), "benchstat")
	build := exec.Command(gobin, "build", "-o", bin, "golang.org/x/perf/cmd/benchstat")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build benchstat (x/perf, go.mod's version): %v\n%s", err, out)
	}
	for _, dir := range realRuns(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			p, _ := writeBench(t, dir)
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, "-col", "kernel", p)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil || stderr.Len() > 0 {
				t.Fatalf("benchstat: %v\n%s", err, stderr.String())
			}
			for _, l := range strings.Split(stdout.String(), "\n") {
				name, _, _ := strings.Cut(l, " ")
				if strings.HasPrefix(l, "Vnetbench") && utf8.RuneCountInString(name) > 72 {
					t.Errorf("benchmark name of %d columns: %s", utf8.RuneCountInString(name), name)
				}
				if configLine.MatchString(l) {
					continue // a file-level "key: value" line benchstat echoes: where constant axes belong
				}
				if strings.Contains(l, "generator.") || strings.Contains(l, "=/") {
					t.Errorf("name carries a constant or empty axis: %s", l)
				}
			}
			if filepath.Base(dir) == "quickstart-tcg" {
				for _, l := range strings.Split(stdout.String(), "\n") {
					if w := utf8.RuneCountInString(l); w > 80 {
						t.Errorf("benchstat line of %d columns (a terminal has 80): %s", w, l)
					}
				}
			}
		})
	}
}

// The medians a report shows are the medians its benchfmt gives back: a
// drop reason a sample did not see is a drop rate of 0 in the tables
// (withDropZeros), so benchfmt writes that 0 too. The per-patch run once
// lost it: p1-3's FULL_RING row read 0 pps (n=3) in text, CSV and JSON,
// while its benchfmt had no FULL_RING value at all, and p1's ip6_mc_input
// row read 0 (n=3) against 0.34 pps (n=1) read back.
func TestBenchfmtKeepsDropZeros(t *testing.T) {
	for _, dir := range realRuns(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			p, set := writeBench(t, dir)
			back, err := results.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			medians := func(set *results.Set) map[string]int {
				r, err := Build(set, Options{By: "kernel"})
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]int{}
				for _, s := range r.Summaries {
					out[fmt.Sprintf("%s %s n=%d median=%g", s.Column, s.Metric, s.Stats.N, s.Stats.Median)]++
				}
				return out
			}
			want, got := medians(set), medians(back)
			for k, n := range want {
				if got[k] != n {
					t.Errorf("report: %s in %d cells; its benchfmt read back: in %d", k, n, got[k])
				}
			}
		})
	}
}

// --metric restricts benchfmt as it does CSV and JSON: report
// --format benchfmt --metric tx_pps of the real lab run once wrote all
// 43 metrics of every sample.
func TestBenchfmtHonoursMetric(t *testing.T) {
	set, err := results.Load(run("lab-pktgen-tcg")...)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(set, Options{Metrics: []string{"tx_pps"}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Render(&b, set, r, "benchfmt", ASCII); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "m.bench")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := results.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range back.Samples {
		for k := range s.Metrics {
			if k != "tx_pps" {
				t.Fatalf("%s %s: metric %s in a benchfmt of --metric tx_pps", s.Kernel, s.Cell, k)
			}
			n++
		}
	}
	if n != countValues(r) {
		t.Errorf("%d tx_pps values read back, want %d", n, countValues(r))
	}
}

// countValues is the number of runs behind r's summaries.
func countValues(r *Report) int {
	n := 0
	for _, s := range r.Summaries {
		n += s.Stats.N
	}
	return n
}

// The axes every sample shares go to file-level "axis: value" lines of
// a benchfmt file, and reading it back took them for labels: report of
// quickstart's benchfmt labelled its rows "trafgen" and "iperf3-p1" where
// the run's report says TAP, and its headers lost the pinning. The
// scenario's axes among those lines are axes again on read.
func TestBenchfmtKeepsConstantAxes(t *testing.T) {
	for _, dir := range realRuns(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			p, set := writeBench(t, dir)
			back, err := results.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"backend", "qdisc", "pin.vcpu", "guest.vcpus"} {
				v, ok := set.Samples[0].Axes[k]
				same := ok
				for _, s := range set.Samples {
					same = same && s.Axes[k] == v
				}
				if !same {
					continue // not constant: in the names, or absent
				}
				for _, s := range back.Samples {
					if s.Axes[k] != v {
						t.Errorf("%s read back with %s=%q, want %q", s.Cell, k, s.Axes[k], v)
						break
					}
				}
			}
		})
	}
	p, _ := writeBench(t, filepath.Join("testdata", "real", "quickstart-tcg"))
	back, err := results.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(back, Options{By: "kernel"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteText(&b, r, ASCII); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| TAP | Transmitted") || !strings.Contains(b.String(), "| TAP | Throughput") {
		t.Errorf("quickstart's benchfmt read back: rows not labelled TAP:\n%s", b.String())
	}
}

// Every axis that varies among the samples reaches benchstat through
// x/perf's reader, in a name part (axis=value under its full or short
// key) or spelled by a cell name part (pktgen-t4: generator pktgen,
// threads 4): the 3-run lab run's pktgen mode (simple at 1 thread,
// multiqueue at 4, chosen by the thread count, so in no cell name) was in
// neither its names nor its configuration lines.
func TestBenchfmtKeepsVaryingAxes(t *testing.T) {
	for _, dir := range realRuns(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			p, set := writeBench(t, dir)
			values := map[string]map[string]bool{}
			for _, s := range set.Samples {
				for k, v := range s.Axes {
					if values[k] == nil {
						values[k] = map[string]bool{}
					}
					values[k][v] = true
				}
			}
			var measured []results.Sample
			for _, kernel := range set.Kernels() {
				for _, s := range set.Samples {
					if s.Kernel == kernel && len(s.Metrics) > 0 {
						measured = append(measured, s)
					}
				}
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, i := benchfmt.NewReader(f, p), 0
			for r.Scan() {
				var rec *benchfmt.Result
				switch x := r.Result().(type) {
				case *benchfmt.SyntaxError:
					t.Fatalf("x/perf benchfmt: %v", x)
				case *benchfmt.Result:
					rec = x
				default:
					continue // Unit metadata
				}
				if i >= len(measured) {
					t.Fatalf("more result lines than measured samples (%d)", len(measured))
				}
				s := measured[i]
				i++
				for k, v := range s.Axes {
					if len(values[k]) > 1 && !nameSays(rec, k, v) {
						t.Errorf("%s (%s=%s varies): %s=%s in neither name nor configuration", rec.Name.Full(), k, strings.Join(slices.Sorted(maps.Keys(values[k])), "|"), k, v)
					}
				}
			}
			if err := r.Err(); err != nil || i != len(measured) {
				t.Errorf("%d result lines, want %d (%v)", i, len(measured), err)
			}
		})
	}
}

// nameSays reports whether rec's name or configuration gives axis k the
// value v: a part k=v (or a dotted suffix of k), a configuration line, or
// a plain part that spells it (the value itself, a generator's part
// "pktgen-t4" for generator pktgen and its threads 4).
func nameSays(rec *benchfmt.Result, k, v string) bool {
	if string(rec.GetConfig(k)) == v {
		return true
	}
	_, parts := rec.Name.Parts()
	for _, p := range parts {
		key, val, ok := strings.Cut(strings.TrimPrefix(string(p), "/"), "=")
		switch {
		case ok && val == v && (key == k || strings.HasSuffix(k, "."+key)):
			return true
		case !ok && (key == v || strings.HasPrefix(key, v+"-") || strings.Contains(key, "-") && strings.HasSuffix(key, v)):
			return true
		}
	}
	return false
}

// benchstat -col /backend compares a tap cell with its tap+vhost twin
// only where their names differ in nothing else it cannot -ignore: a
// part spelling an axis that only tap+vhost cells have ("vhost-pin0",
// pin.vhost) was positional, in some names only, so no tap cell ever met
// its twin in a row. Written as axis=value ("vhost=0"), the parts only
// some lines have can be ignored, and every line of a real run with two
// backends finds its other backend.
func TestBenchfmtBackendsPairUp(t *testing.T) {
	n := 0
	for _, dir := range realRuns(t) {
		p, _ := writeBench(t, dir)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		var recs []*benchfmt.Result
		keys := map[string]int{} // the name parts' keys, by lines that have them
		for r := benchfmt.NewReader(f, p); r.Scan(); {
			if rec, ok := r.Result().(*benchfmt.Result); ok {
				recs = append(recs, rec.Clone())
				_, parts := rec.Name.Parts()
				for _, part := range parts {
					if k, _, ok := strings.Cut(string(part), "="); ok {
						keys[k]++
					}
				}
			}
		}
		f.Close()
		if keys["/backend"] == 0 {
			continue // one backend
		}
		n++
		// -col /backend -ignore every key only some lines have.
		backends := map[string]map[string]bool{}
		all := map[string]bool{}
		for _, rec := range recs {
			_, parts := rec.Name.Parts()
			var row []string
			backend := ""
			for _, part := range parts {
				k, v, ok := strings.Cut(string(part), "=")
				switch {
				case k == "/backend":
					backend = v
				case !ok || keys[k] == len(recs):
					row = append(row, string(part))
				}
			}
			key := string(rec.GetConfig("kernel")) + " " + strings.Join(row, "")
			if backends[key] == nil {
				backends[key] = map[string]bool{}
			}
			backends[key][backend], all[backend] = true, true
		}
		for key, got := range backends {
			if len(got) != len(all) {
				t.Errorf("%s: %s: backends %v of %v: benchstat -col /backend cannot pair it", filepath.Base(dir), key, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(all)))
			}
		}
	}
	if n == 0 {
		t.Fatal("no real run with two backends")
	}
}

// Every axis that varies is a benchstat key: a name part key=value (or a
// file-level line), never only a positional part, which benchstat cannot
// address: a generator's "pktgen-t4" spelled the thread count alone, so
// `benchstat -col /threads` found nothing ("q4" and "pkt1500" were
// followed by queues=4 and pkt_size=1500 already). The generator's name
// may stay a plain part.
func TestBenchfmtVaryingAxesAreKeys(t *testing.T) {
	sets := map[string]*results.Set{
		"queues, threads, pkt_size": runnerSamples(t, `backend: tap
queues: [1, 4]
generator: {pktgen: {mode: multiqueue, threads: [1, 4], pkt_size: [60, 1500], count: 5000}}
`, 1),
	}
	for _, dir := range realRuns(t) {
		set, err := results.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		sets[filepath.Base(dir)] = set
	}
	for name, set := range sets {
		values := map[string]map[string]bool{}
		for _, s := range set.Samples {
			for k, v := range s.Axes {
				if values[k] == nil {
					values[k] = map[string]bool{}
				}
				values[k][v] = true
			}
		}
		var b bytes.Buffer
		if err := results.WriteBenchfmt(&b, set); err != nil {
			t.Fatal(err)
		}
		var measured []results.Sample
		for _, kernel := range set.Kernels() {
			for _, s := range set.Samples {
				if s.Kernel == kernel && len(s.Metrics) > 0 {
					measured = append(measured, s)
				}
			}
		}
		r, i := benchfmt.NewReader(&b, name), 0
		for r.Scan() {
			rec, ok := r.Result().(*benchfmt.Result)
			if !ok {
				continue
			}
			s := measured[i]
			i++
			for k, v := range s.Axes {
				if len(values[k]) < 2 || k == "generator" {
					continue
				}
				if !keySays(rec, k, v) {
					t.Errorf("%s: %s: %s=%s (it varies) is no benchstat key", name, rec.Name.Full(), k, v)
				}
			}
		}
		if i != len(measured) {
			t.Errorf("%s: %d result lines, want %d", name, i, len(measured))
		}
	}
}

// keySays reports whether rec gives axis k the value v under a key
// benchstat addresses: a name part k=v (or a dotted suffix of k) or a
// configuration line.
func keySays(rec *benchfmt.Result, k, v string) bool {
	if string(rec.GetConfig(k)) == v {
		return true
	}
	_, parts := rec.Name.Parts()
	for _, p := range parts {
		key, val, ok := strings.Cut(strings.TrimPrefix(string(p), "/"), "=")
		if ok && val == v && (key == k || strings.HasSuffix(k, "."+key)) {
			return true
		}
	}
	return false
}

// A file written before threads became a key ("pktgen-t4" alone) and one
// written after ("pktgen-t4/threads=4") read into the same cells, so a
// history or a compare of both pairs them; the newer one also tells the
// report the thread count, whose 4-thread table read back as a 1-thread
// "Transmitted" table.
func TestBenchfmtThreadsKeyKeepsCells(t *testing.T) {
	dir := t.TempDir()
	cells := map[string][]string{}
	for name, line := range map[string]string{
		"old": "BenchmarkVnetbench/backend=tap/pktgen-t4/mode=multiqueue 1 400 tx_pps\nBenchmarkVnetbench/backend=tap/pktgen-t1/mode=simple 1 900 tx_pps\n",
		"new": "BenchmarkVnetbench/backend=tap/pktgen-t4/threads=4/mode=multiqueue 1 400 tx_pps\nBenchmarkVnetbench/backend=tap/pktgen-t1/threads=1/mode=simple 1 900 tx_pps\n",
	} {
		p := filepath.Join(dir, name+".bench")
		if err := os.WriteFile(p, []byte("generator: pktgen\nkernel: k\n"+line), 0o644); err != nil {
			t.Fatal(err)
		}
		set, err := results.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range set.Samples {
			cells[name] = append(cells[name], s.Cell)
		}
		if name == "new" && set.Samples[0].Axes["threads"] != "4" {
			t.Errorf("new: axes %v, want threads 4", set.Samples[0].Axes)
		}
	}
	if !slices.Equal(cells["old"], cells["new"]) || cells["old"][0] != "tap/pktgen-t4/multiqueue" {
		t.Errorf("cells: old %q, new %q", cells["old"], cells["new"])
	}
}
