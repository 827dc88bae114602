package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/history"
)

// historyJSON is the JSON contract of docs/history.md.
type historyJSON struct {
	Series []struct {
		Metric       string `json:"metric"`
		Cell         string `json:"cell"`
		Kernel       string `json:"kernel"`
		Points       int    `json:"points"`
		ChangePoints []struct {
			Index     int      `json:"index"`
			Label     string   `json:"label"`
			Before    float64  `json:"before"`
			After     float64  `json:"after"`
			Change    *float64 `json:"change"`
			P         float64  `json:"p"`
			Direction string   `json:"direction"`
		} `json:"change_points"`
	} `json:"series"`
}

// fakeHistory writes n copies of the real quickstart run, one per commit
// an hour apart, with 2% noise on every metric and tx_pps and
// throughput_bps scaled by factor from run stepAt on. It returns the run
// directories in time order.
func fakeHistory(t *testing.T, n, stepAt int, factor float64) []string {
	t.Helper()
	src := real + "quickstart-tcg/"
	lines, err := os.ReadFile(src + "results.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	envData, err := os.ReadFile(src + "env.json")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 25))
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	root := t.TempDir()
	var dirs []string
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("run-%03d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var env map[string]any
		if err := json.Unmarshal(envData, &env); err != nil {
			t.Fatal(err)
		}
		env["created"] = base.Add(time.Duration(i) * time.Hour).Format(time.RFC3339Nano)
		env["build"] = map[string]any{"release": "6.18.44", "commit": fmt.Sprintf("c%011d%028d", i, 0), "tree": "linux", "key": fmt.Sprint(i), "config_sha256": "ab"}
		writeJSONFile(t, filepath.Join(dir, "env.json"), env)
		var out bytes.Buffer
		sc := bufio.NewScanner(bytes.NewReader(lines))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var s map[string]any
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				t.Fatal(err)
			}
			ms := s["metrics"].(map[string]any)
			for _, k := range slices.Sorted(maps.Keys(ms)) {
				f := ms[k].(float64) * (1 + 0.02*r.NormFloat64())
				if i >= stepAt && (k == "tx_pps" || k == "throughput_bps") {
					f *= factor
				}
				ms[k] = f
			}
			b, _ := json.Marshal(s)
			out.Write(append(b, '\n'))
		}
		if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func runHistory(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(t.Context(), append([]string{"history"}, args...), &out, &errb)
	return out.String(), errb.String(), err
}

func decodeHistory(t *testing.T, s string) historyJSON {
	t.Helper()
	var h historyJSON
	if err := json.Unmarshal([]byte(s), &h); err != nil {
		t.Fatalf("%v in:\n%s", err, s)
	}
	return h
}

// TestHistoryRealRuns: the two real captures, read directly, are one
// point per series: no change point, and a gate on them decides nothing:
// undecided, exit 3 with its reason, not a pass.
func TestHistoryRealRuns(t *testing.T) {
	out, errs, err := runHistory(t, real+"quickstart-tcg", real+"lab-pktgen-tcg", "--format", "json", "--fail-on-new", "3")
	if exitCode(err) != 3 || !strings.Contains(fmt.Sprint(err), "--fail-on-new: undecided: no series has the 10 points a change point needs (the longest has 1)") {
		t.Fatalf("gate on 1 point per series: %v (exit %d), want undecided, exit 3\n%s", err, exitCode(err), errs)
	}
	h := decodeHistory(t, out)
	if len(h.Series) < 20 {
		t.Fatalf("%d series, want the quickstart's and the lab run's", len(h.Series))
	}
	for _, s := range h.Series {
		if s.Points != 1 || len(s.ChangePoints) != 0 {
			t.Errorf("%s %s %s: %d points, %d change points; want 1 and none", s.Metric, s.Cell, s.Kernel, s.Points, len(s.ChangePoints))
		}
	}
}

// TestHistoryIndexGate records a history of the real quickstart run with
// a 25% throughput drop at run 30 of 40, given out of order, and checks
// the change point, the gate and rebuild.
func TestHistoryIndexGate(t *testing.T) {
	dirs := fakeHistory(t, 40, 30, 0.75)
	db := filepath.Join(t.TempDir(), "h.db")
	shuffled := append([]string(nil), dirs...)
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, batch := range [][]string{shuffled[:20], shuffled[20:]} {
		if _, errs, err := runHistory(t, append([]string{"add", "--db", db}, batch...)...); err != nil {
			t.Fatalf("add: %v\n%s", err, errs)
		}
	}
	out, errs, err := runHistory(t, "--db", db, "--format", "json", "--metric", "tx_pps,throughput_bps,rx_pps", "--fail-on-new", "12")
	if err == nil || exitCode(err) != exitFailure {
		t.Fatalf("--fail-on-new 12 with a drop at 30 of 40: err %v (exit %d), want exit 1", err, exitCode(err))
	}
	if want := "2 regressions in the last 12 points; bisect the ranges above"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want %q", err, want)
	}
	want := fmt.Sprintf("bisect between %q (last good) and %q (first bad)", fmt.Sprintf("c%011d", 29), fmt.Sprintf("c%011d", 30))
	if !strings.Contains(errs, want) {
		t.Errorf("stderr does not say %s:\n%s", want, errs)
	}
	h := decodeHistory(t, out)
	found := 0
	for _, s := range h.Series {
		if s.Points != 40 {
			t.Errorf("%s %s: %d points, want 40", s.Metric, s.Cell, s.Points)
		}
		stepped := s.Metric != "rx_pps" && (s.Metric == "tx_pps") == strings.Contains(s.Cell, "trafgen")
		switch {
		case stepped && (len(s.ChangePoints) != 1 || s.ChangePoints[0].Index != 30 || s.ChangePoints[0].Direction != "regression"):
			t.Errorf("%s %s: change points %+v, want one regression at 30", s.Metric, s.Cell, s.ChangePoints)
		case stepped:
			found++
			if c := *s.ChangePoints[0].Change; c > -0.2 || c < -0.3 {
				t.Errorf("%s %s: change %.3f, want about -0.25", s.Metric, s.Cell, c)
			}
		case len(s.ChangePoints) != 0:
			t.Errorf("%s %s: change points %+v in a series without a change", s.Metric, s.Cell, s.ChangePoints)
		}
	}
	if found != 2 {
		t.Errorf("%d stepped series found, want tx_pps (trafgen) and throughput_bps (iperf3)", found)
	}
	// Rebuild from the run directories alone gives the same answer.
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	if _, errs, err := runHistory(t, append([]string{"rebuild", "--db", db}, dirs...)...); err != nil {
		t.Fatalf("rebuild: %v\n%s", err, errs)
	}
	again, _, _ := runHistory(t, "--db", db, "--format", "json", "--metric", "tx_pps,throughput_bps,rx_pps")
	if again != out {
		t.Errorf("after rebuild:\n%s\nbefore:\n%s", again, out)
	}
	if _, _, err := runHistory(t, "--db", db, "--fail-on-new", "5", "--metric", "tx_pps"); err != nil {
		t.Errorf("--fail-on-new 5 with the drop 10 points back: %v, want exit 0", err)
	}
	_, _, err = runHistory(t, "--db", db, "--fail-on-new", "12", "--metric", "tx_pps")
	if want := "1 regression in the last 12 points; bisect the range above"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("--fail-on-new 12 --metric tx_pps: error %v, want %q", err, want)
	}
}

// TestHistoryOrder: run directories given out of order are ordered by
// their recorded time unless --order given.
func TestHistoryOrder(t *testing.T) {
	dirs := fakeHistory(t, 30, 15, 2)
	rev := make([]string, len(dirs))
	for i, d := range dirs {
		rev[len(dirs)-1-i] = d
	}
	for _, tc := range []struct {
		order string
		index int
		dir   string
	}{{"time", 15, "improvement"}, {"given", 15, "regression"}} {
		out, errs, err := runHistory(t, append([]string{"--format", "json", "--metric", "throughput_bps", "--order", tc.order}, rev...)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, errs)
		}
		h := decodeHistory(t, out)
		if len(h.Series) != 1 || len(h.Series[0].ChangePoints) != 1 {
			t.Fatalf("--order %s: %+v, want one series with one change point", tc.order, h)
		}
		if c := h.Series[0].ChangePoints[0]; c.Index != tc.index || c.Direction != tc.dir {
			t.Errorf("--order %s: change point %+v, want %s at %d", tc.order, c, tc.dir, tc.index)
		}
	}
}

// A CSV's rows have no recorded time: history kept them in file order
// under --order time, silently the same output as --order given. With
// CSV inputs alone, --order time is refused (exit 2, one line);
// --order given, which is what it does, and a run directory beside the
// CSV, which --order time does sort, are fine.
func TestHistoryOrderCSV(t *testing.T) {
	csv := filepath.Join("testdata", "history", "bench.csv")
	_, _, err := runHistory(t, csv, "--order", "time")
	if code := exitCode(err); code != exitBadInput || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "CSV rows have no recorded time and stay in file order") {
		t.Errorf("--order time on a CSV: exit %d: %v, want 2 and why", code, err)
	}
	dirs := fakeHistory(t, 4, 2, 2)
	for _, args := range [][]string{{csv}, {csv, "--order", "given"}, append([]string{csv, "--order", "time"}, dirs...)} {
		if _, errs, err := runHistory(t, args...); err != nil {
			t.Errorf("history %v: %v\n%s", args, err, errs)
		}
	}
}

// TestHistoryCSV: a CSV series from another tool, lower is better for
// ns/op, an empty cell missing.
func TestHistoryCSV(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	var b strings.Builder
	b.WriteString("commit,ns/op,custom\n")
	for i := range 60 {
		ns := 1000 + 10*r.NormFloat64()
		if i >= 40 {
			ns += 50
		}
		custom := ""
		if i%7 != 3 {
			custom = fmt.Sprintf("%.3f", 5+0.1*r.NormFloat64())
		}
		fmt.Fprintf(&b, "abc%03d,%.2f,%s\n", i, ns, custom)
	}
	csv := filepath.Join(t.TempDir(), "bench.csv")
	if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, err := runHistory(t, csv, "--format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	h := decodeHistory(t, out)
	if len(h.Series) != 2 {
		t.Fatalf("%d series, want ns/op and custom", len(h.Series))
	}
	ns, custom := h.Series[0], h.Series[1]
	if ns.Metric != "ns/op" || ns.Cell != "" || ns.Points != 60 || len(ns.ChangePoints) != 1 {
		t.Fatalf("ns/op series %+v, want 60 points and one change point", ns)
	}
	if c := ns.ChangePoints[0]; c.Index != 40 || c.Label != "abc040" || c.Direction != "regression" {
		t.Errorf("ns/op change point %+v, want a regression at 40 (abc040)", c)
	}
	if custom.Metric != "custom" || custom.Points != 51 || len(custom.ChangePoints) != 0 {
		t.Errorf("custom series %+v, want 51 points (9 missing) and no change point", custom)
	}
	text, _, err := runHistory(t, csv)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ns/op: 60 points", "abc040", "regression", "custom: 51 points", "no change points"} {
		if !strings.Contains(text, want) {
			t.Errorf("text output lacks %q:\n%s", want, text)
		}
	}
	html := filepath.Join(t.TempDir(), "h.html")
	if _, _, err := runHistory(t, csv, "-o", html); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(html)
	for _, want := range []string{"<svg", "<polyline", "abc040 +", "fill-opacity"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

func TestHistoryBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("label,x\na,1\nb,fast\n"), 0o644)
	// CSVs whose series or points no output could tell apart: a column
	// named twice or not at all, a row without a label.
	csvs := map[string]string{
		"dup.csv": "label,x,x\na,1,2\nb,1,2\n", "noname.csv": "label,,x\na,1,2\nb,1,2\n", "nolabel.csv": "label,x\na,1\n,2\n",
		"good.csv": "label,x\na,1\nb,2\n",
		// An infinite value was dropped as missing, without a word.
		"inf.csv": "label,x\na,1\nb,+Inf\nc,2\n",
	}
	for f, text := range csvs {
		os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644)
	}
	for _, args := range [][]string{
		{bad},
		{filepath.Join(dir, "dup.csv")},
		{filepath.Join(dir, "noname.csv")},
		{filepath.Join(dir, "nolabel.csv")},
		{filepath.Join(dir, "inf.csv")},
		{"--higher-is-better", "y", filepath.Join(dir, "good.csv")}, // a typo, silently no direction
		{"--lower-is-better", "x,y", filepath.Join(dir, "good.csv")},
		{filepath.Join(dir, "missing")},
		{"--db", filepath.Join(dir, "none.db")},
		{"--order", "random", bad},
		{"--sensitivity", "extreme", bad},
		{"--sensitivity", "0.5", bad},
		{"--sensitivity", "0", bad},
		{"add"},
		{"add", "--db", filepath.Join(dir, "x.db"), dir},
	} {
		_, _, err := runHistory(t, args...)
		if code := exitCode(err); code != exitBadInput {
			t.Errorf("history %v: exit %d (%v), want 2", args, code, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") {
			t.Errorf("history %v: error on several lines: %q", args, msg)
		}
	}
}

// TestHistoryConcurrentAdd: 10 'history add' at once on one index, named
// with '?' and '#' (a file name, not an SQLite URI), all succeed and
// record every run in that file.
func TestHistoryConcurrentAdd(t *testing.T) {
	dirs := fakeHistory(t, 10, 5, 0.75)
	dir := t.TempDir()
	db := filepath.Join(dir, "ci?mode=ro#1.db")
	errs := make([]error, len(dirs))
	var wg sync.WaitGroup
	for i, d := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, stderr, err := runHistory(t, "add", "--db", db, d)
			if err != nil {
				errs[i] = fmt.Errorf("%v: %s", err, stderr)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("history add %d: %v", i, err)
		}
	}
	out, stderr, err := runHistory(t, "--db", db, "--format", "json", "--metric", "tx_pps", "--cell", "tap/trafgen/pfifo_fast")
	if err != nil {
		t.Fatalf("history --db: %v\n%s", err, stderr)
	}
	if h := decodeHistory(t, out); len(h.Series) != 1 || h.Series[0].Points != 10 {
		t.Errorf("index holds %+v, want one series of 10 points", h.Series)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "ci?mode=ro#1.db") {
			t.Errorf("stray file %q beside the index", e.Name())
		}
	}
}

// TestHistorySensitivity: --sensitivity's names mean the p-values
// docs/history.md gives (default 0.001), each change point reported has
// p at most that level, and a higher sensitivity reports no fewer.
func TestHistorySensitivity(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 25))
	var b strings.Builder
	b.WriteString("commit,ops_per_s\n")
	for i := range 120 {
		v := 1000 + 10*r.NormFloat64()
		if i >= 40 {
			v -= 6 // a step of 0.6x the noise: near the detection limit
		}
		if i >= 80 {
			v += 30
		}
		fmt.Fprintf(&b, "c%03d,%.3f\n", i, v)
	}
	path := filepath.Join(t.TempDir(), "s.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	prev := -1
	for _, tc := range []struct {
		level string
		alpha float64
	}{{"low", 0.0002}, {"default", 0.001}, {"high", 0.005}, {"0.02", 0.02}, {"0.1", 0.1}} {
		if p, err := historyParams(tc.level); err != nil || p.Alpha != tc.alpha {
			t.Errorf("--sensitivity %s: p <= %g (%v), want %g", tc.level, p.Alpha, err, tc.alpha)
		}
		out, stderr, err := runHistory(t, "--format", "json", "--sensitivity", tc.level, path)
		if err != nil {
			t.Fatalf("--sensitivity %s: %v\n%s", tc.level, err, stderr)
		}
		h := decodeHistory(t, out)
		cps := h.Series[0].ChangePoints
		for _, c := range cps {
			if c.P > tc.alpha {
				t.Errorf("--sensitivity %s: change at %d with p %.3g above %g", tc.level, c.Index, c.P, tc.alpha)
			}
		}
		if len(cps) < prev {
			t.Errorf("--sensitivity %s: %d change points, fewer than the %d of a lower sensitivity", tc.level, len(cps), prev)
		}
		if len(cps) == 0 {
			t.Errorf("--sensitivity %s: the 3x step at 80 is not found", tc.level)
		}
		prev = len(cps)
	}
}

// TestHistoryResultsFirst: the default text shows result metrics (tx_pps
// first) and leaves diagnostics out, saying how many and how to see
// them; --all shows them after the results; JSON has every series.
func TestHistoryResultsFirst(t *testing.T) {
	dirs := fakeHistory(t, 12, 6, 0.75)
	text, stderr, err := runHistory(t, dirs...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	titles := regexp.MustCompile(`(?m)^(\S+) · .*: \d+ points$`).FindAllStringSubmatch(text, -1)
	if len(titles) == 0 || titles[0][1] != "tx_pps" {
		t.Fatalf("first series is not tx_pps:\n%s", text)
	}
	for _, m := range titles {
		if diagnosticMetric(m[1]) {
			t.Errorf("default output shows the diagnostic %s", m[1])
		}
	}
	if !regexp.MustCompile(`\(\d+ diagnostic series .* not shown; --all shows them\)`).MatchString(text) {
		t.Errorf("default output does not say diagnostics were left out:\n%s", text)
	}
	all, _, err := runHistory(t, append([]string{"--all"}, dirs...)...)
	if err != nil {
		t.Fatal(err)
	}
	allTitles := regexp.MustCompile(`(?m)^(\S+) · .*: \d+ points$`).FindAllStringSubmatch(all, -1)
	seenDiag := false
	for _, m := range allTitles {
		if d := diagnosticMetric(m[1]); d {
			seenDiag = true
		} else if seenDiag {
			t.Errorf("--all: result metric %s after a diagnostic", m[1])
		}
	}
	if !seenDiag || len(allTitles) <= len(titles) {
		t.Errorf("--all shows %d series, default %d; want the diagnostics too", len(allTitles), len(titles))
	}
	js, _, err := runHistory(t, append([]string{"--format", "json"}, dirs...)...)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(decodeHistory(t, js).Series); n != len(allTitles) {
		t.Errorf("JSON has %d series, --all text %d", n, len(allTitles))
	}
}

// TestHistoryCSVDirection: a CSV column's direction comes from its name
// (ops_per_s up, latency_ms down) or from --higher-is-better and
// --lower-is-better; a name in both is bad input.
func TestHistoryCSVDirection(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	var b strings.Builder
	b.WriteString("commit,ops_per_s,latency_ms,widgets\n")
	for i := range 60 {
		step := 0.0
		if i >= 30 {
			step = 1
		}
		fmt.Fprintf(&b, "c%03d,%.2f,%.4f,%.2f\n", i, 26700-3000*step+100*r.NormFloat64(), 1.2+0.3*step+0.01*r.NormFloat64(), 50+5*step+r.NormFloat64())
	}
	csv := filepath.Join(t.TempDir(), "d.csv")
	if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flags []string
		want  []string // direction of each column's change at 30
	}{
		{nil, []string{"regression", "regression", "change"}},
		{[]string{"--higher-is-better", "widgets"}, []string{"regression", "regression", "improvement"}},
		{[]string{"--lower-is-better", "widgets,ops_per_s"}, []string{"improvement", "regression", "regression"}},
	} {
		out, stderr, err := runHistory(t, append(append([]string{"--format", "json"}, tc.flags...), csv)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.flags, err, stderr)
		}
		h := decodeHistory(t, out)
		for i, s := range h.Series {
			if len(s.ChangePoints) != 1 || s.ChangePoints[0].Index != 30 || s.ChangePoints[0].Direction != tc.want[i] {
				t.Errorf("%v: %s change points %+v, want one %s at 30", tc.flags, s.Metric, s.ChangePoints, tc.want[i])
			}
		}
	}
	if _, _, err := runHistory(t, "--higher-is-better", "widgets", "--lower-is-better", "widgets", csv); exitCode(err) != exitBadInput {
		t.Errorf("widgets both higher and lower is better: %v, want exit 2", err)
	}
}

// TestHistoryCSVUnits: a CSV column that names a catalogued metric is
// written in its unit, as the report tables write it.
func TestHistoryCSVUnits(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	var b strings.Builder
	b.WriteString("commit,tx_pps\n")
	for i := range 40 {
		v := 452000 + 3000*r.NormFloat64()
		if i >= 20 {
			v -= 60000
		}
		fmt.Fprintf(&b, "c%03d,%.1f\n", i, v)
	}
	csv := filepath.Join(t.TempDir(), "u.csv")
	if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runHistory(t, csv)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !regexp.MustCompile(`4\d\d Kpps +3\d\d Kpps +-1\d\.\d%`).MatchString(out) {
		t.Errorf("the change is not written in Kpps:\n%s", out)
	}
}

// A --metric or --cell that matches no series says which one and what the
// history has, as report does for an unknown metric; it once printed
// "no series match --metric nope --cell " (an empty --cell nobody gave)
// and nothing to choose from.
func TestHistoryNoMatchSaysWhatThereIs(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		want, miss string
	}{
		{[]string{"--metric", "nope"}, `--metric nope: the history has metrics`, "--cell"},
		{[]string{"--cell", "tap/nope"}, `--cell tap/nope: the history has cells`, "--metric"},
		// One name of several that matches nothing is refused too: the
		// others' series were shown and gated, that one dropped silently.
		{[]string{"--metric", "tx_pps,lost_ps"}, `--metric lost_ps: the history has metrics`, "--cell"},
		{[]string{"--metric", "tx_pps", "--cell", "tap/trafgen/pfifo_fast,tap/nope"}, `--cell tap/nope: the history has cells`, "--metric"},
	} {
		_, _, err := runHistory(t, append([]string{real + "quickstart-tcg"}, tc.args...)...)
		if code := exitCode(err); code != exitBadInput {
			t.Fatalf("history %v: exit %d (%v), want 2", tc.args, code, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, tc.miss) || strings.Contains(msg, "\n") {
			t.Errorf("history %v: %q, want one line with %q and no %s", tc.args, msg, tc.want, tc.miss)
		}
		if !strings.Contains(msg, "tx_pps") && !strings.Contains(msg, "tap/trafgen/pfifo_fast") {
			t.Errorf("history %v: %q names none of the run's metrics or cells", tc.args, msg)
		}
	}
}

// CI logs quote add's and rebuild's lines: one run is "1 run".
func TestHistoryAddCountsRuns(t *testing.T) {
	dirs := fakeHistory(t, 2, 3, 1)
	db := filepath.Join(t.TempDir(), "h.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "--db", db, dirs[0]}, "recorded 1 run in " + db + "\n"},
		{[]string{"add", "--db", db, dirs[0], dirs[1]}, "recorded 2 runs in " + db + "\n"},
		// One directory twice is one record: it said "recorded 2 runs".
		{[]string{"add", "--db", db, dirs[1], dirs[1] + "/"}, "recorded 1 run in " + db + "\n"},
		// A run's results.jsonl is the run: one record, as report reads it.
		{[]string{"add", "--db", db, dirs[1], filepath.Join(dirs[1], "results.jsonl")}, "recorded 1 run in " + db + "\n"},
		{[]string{"rebuild", "--db", db, dirs[1]}, "rebuilt " + db + " from 1 run\n"},
	} {
		out, stderr, err := runHistory(t, tc.args...)
		if err != nil || out != tc.want {
			t.Errorf("history %v: %q (%v %s), want %q", tc.args, out, err, stderr, tc.want)
		}
	}
	// A CSV is read, not recorded: the error said it held no benchmark
	// results.
	csv := filepath.Join(t.TempDir(), "s.csv")
	os.WriteFile(csv, []byte("label,x\na,1\nb,2\n"), 0o644)
	if _, _, err := runHistory(t, "add", "--db", db, csv); exitCode(err) != exitBadInput || !strings.Contains(err.Error(), "read a CSV's series with 'vnetbench history "+csv+"'") {
		t.Errorf("history add CSV: %v, want exit 2 saying to read it with history", err)
	}
}

// A --fail-on-new gate over series some of which are too short for any
// change point says which are not gated yet and passes on the rest; over
// only such series it is undecided (exit 3), never a pass.
func TestGateNewShortSeries(t *testing.T) {
	series := func(n int) history.Result {
		var r history.Result
		for i := range n {
			r.Points = append(r.Points, history.Point{Label: fmt.Sprint(i), Value: 100})
		}
		return r
	}
	var errb bytes.Buffer
	if err := gateNew([]history.Result{series(12), series(3)}, 5, &errb); err != nil ||
		!strings.Contains(errb.String(), "1 of 2 series have fewer than the 10 points a change point needs: not gated yet") {
		t.Errorf("12 and 3 points: %v, stderr %q; want a pass that names the short series", err, errb.String())
	}
	err := gateNew([]history.Result{series(9), series(3)}, 5, io.Discard)
	if !errors.Is(err, fault.ErrUndecided) || !strings.Contains(err.Error(), "the longest has 9") {
		t.Errorf("9 and 3 points: %v, want undecided", err)
	}
	if err := gateNew([]history.Result{series(10)}, 5, io.Discard); err != nil {
		t.Errorf("10 stable points: %v, want a pass", err)
	}
}

// history add says what reading a run met, as report does: a run whose
// results.jsonl ends in a torn line (a run killed mid-write) is recorded
// without that line, with the warning on stderr.
func TestHistoryAddWarnsTornLine(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	copyDir(t, real+"quickstart-tcg", run)
	f, err := os.OpenFile(filepath.Join(run, "results.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"run":"x","cell":"tap/trafgen`)
	f.Close()
	db := filepath.Join(t.TempDir(), "h.db")
	out, errs, err := runHistory(t, "add", "--db", db, run)
	if err != nil || !strings.Contains(out, "recorded 1 run") {
		t.Fatalf("add: %v\n%s%s", err, out, errs)
	}
	if !strings.Contains(errs, "vnetbench: warning: ") || !strings.Contains(errs, "ignoring torn last line") {
		t.Errorf("stderr %q, want the torn line's warning", errs)
	}
}
