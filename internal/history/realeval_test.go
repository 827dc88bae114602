package history

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The evaluation on real labelled series. The data are public but not
// the project's to ship, so the test reads them from where the caller
// put them and skips, saying so, when they are absent:
//
//	VNETBENCH_TCPD=DIR        the Turing Change Point Dataset (DIR holds
//	                          annotations.json and datasets/*/*.json)
//	VNETBENCH_PERFSERIES=DIR  CI performance histories, one CSV per series
//	                          (see readPerfSeries)
//
// go test -v -run TestRealSeries ./internal/history prints, per data set
// and half (train: the half the detector was tuned on; held-out: the
// rest, split by a hash of the series' name), each detector's mean F1
// and covering (margin 5, as TCPD) and its false alerts per 1,000
// points (predictions farther than the margin from every annotation).

// labelled is a real series with its annotations (one set per annotator).
type labelled struct {
	name string
	xs   []float64
	ann  [][]int
	// prod holds the change points the series' own production alerting
	// reported, when known.
	prod []int
}

// heldOut tells which half a series is in: a fixed hash of its name, so
// the split does not depend on the order or on which files are present.
func heldOut(name string) bool {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()%2 == 1
}

// readTCPD reads TCPD's univariate series; a missing value repeats the
// one before it (TCPD's indices count every time step). Annotated series
// whose data are not in dir (TCPD fetches some by scripts) are skipped.
func readTCPD(dir string) ([]labelled, error) {
	ann, err := tcpdAnnotations(dir)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "datasets", "*", "*.json"))
	if err != nil {
		return nil, err
	}
	var out []labelled
	for _, f := range files {
		s, ok, err := readTCPDFile(f, ann)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// tcpdAnnotations reads annotations.json: series name to annotator to
// change points.
func tcpdAnnotations(dir string) (map[string]map[string][]int, error) {
	data, err := os.ReadFile(filepath.Join(dir, "annotations.json"))
	if err != nil {
		return nil, err
	}
	var ann map[string]map[string][]int
	if err := json.Unmarshal(data, &ann); err != nil {
		return nil, fmt.Errorf("annotations.json: %w", err)
	}
	return ann, nil
}

// readTCPDFile reads one data set; ok is false when it is not a single
// annotated univariate series.
func readTCPDFile(f string, ann map[string]map[string][]int) (labelled, bool, error) {
	var d struct {
		Name   string `json:"name"`
		NDim   int    `json:"n_dim"`
		Series []struct {
			Raw []*float64 `json:"raw"`
		} `json:"series"`
	}
	data, err := os.ReadFile(f)
	if err != nil {
		return labelled{}, false, err
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return labelled{}, false, fmt.Errorf("%s: %w", f, err)
	}
	a, ok := ann[d.Name]
	if !ok || d.NDim != 1 || len(d.Series) != 1 {
		return labelled{}, false, nil
	}
	s := labelled{name: d.Name}
	last := 0.0
	for _, v := range d.Series[0].Raw {
		if v != nil && !math.IsNaN(*v) {
			last = *v
		}
		s.xs = append(s.xs, last)
	}
	for _, u := range slices.Sorted(maps.Keys(a)) {
		s.ann = append(s.ann, a[u])
	}
	return s, true, nil
}

// readPerfSeries reads CI performance histories in the layout of
// Mozilla's published performance alert data (one CSV per series, files
// named *_timeseries_data.csv, found recursively): a row per revision
// with its "value" and, in "alert_summary_status_general" (or
// "alert_status_general"), the triage of the alert at that revision: TP
// (a real change the alerting found), FN (a real change a person added),
// FP (an alert the triage rejected), SP (an alert not yet triaged:
// untriaged or investigating), empty or TN for none. The truth is TP and
// FN; the production alerting's own prediction is TP, FP and SP, as in
// the data set's own conversion to TCPDBench (mozilla_to_TCPDBench.py).
// Rows are taken in file order, one point each: give the files aggregated
// to one row per revision and sorted by push time (the data set's
// all-datasets-annotated-aggregated folder, or the min-max scaled copy in
// the GitHub repository mozilla/REALISE-Performance,
// data/all-datasets-annotated-aggregated-minmaxscaled), not the raw
// measurements.
func readPerfSeries(dir string) ([]labelled, error) {
	var out []labelled
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_timeseries_data.csv") {
			return err
		}
		s, err := readPerfCSV(path)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(s.xs) > 0 {
			out = append(out, s)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, err
}

func readPerfCSV(path string) (labelled, error) {
	s := labelled{name: strings.TrimSuffix(filepath.Base(path), "_timeseries_data.csv")}
	f, err := os.Open(path)
	if err != nil {
		return s, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	head, err := r.Read()
	if err != nil {
		return s, err
	}
	vcol, lcol := slices.Index(head, "value"), slices.Index(head, "alert_summary_status_general")
	if lcol < 0 {
		lcol = slices.Index(head, "alert_status_general")
	}
	if vcol < 0 || lcol < 0 {
		return s, errors.New("no value or alert status column")
	}
	var truth []int
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return s, err
		}
		if len(rec) <= max(vcol, lcol) {
			continue
		}
		v, err := strconv.ParseFloat(rec[vcol], 64)
		if err != nil || math.IsNaN(v) {
			continue
		}
		i := len(s.xs)
		s.xs = append(s.xs, v)
		switch rec[lcol] {
		case "TP":
			truth = append(truth, i)
			s.prod = append(s.prod, i)
		case "FN":
			truth = append(truth, i)
		case "FP", "SP":
			s.prod = append(s.prod, i)
		}
	}
	s.ann = [][]int{truth}
	if s.prod == nil {
		s.prod = []int{}
	}
	return s, nil
}

// oldDefault is the parameter set before the real-series evaluation:
// p <= 0.001 and noise correlation allowed for up to 0.95.
var oldDefault = Params{Alpha: 0.001, MinSegment: 5, TrendWindow: 50, MaxPhi: 0.95}

// detector is a named change-point detector for the comparison.
type detector struct {
	name string
	find func(s labelled) []int
}

func detectors(extra ...detector) []detector {
	ds := []detector{
		{"vnetbench", func(s labelled) []int { return indices(Default.Detect(s.xs)) }},
		{"old", func(s labelled) []int { return indices(oldDefault.Detect(s.xs)) }},
		{"binseg", func(s labelled) []int { return binSeg(s.xs, Default.MinSegment, 5) }},
		{"pelt", func(s labelled) []int { return pelt(s.xs, Default.MinSegment) }},
		{"zero", func(labelled) []int { return nil }},
	}
	return append(ds, extra...)
}

// realScore is a detector's mean scores over a set of series.
type realScore struct {
	n                  int
	f1, cover          float64
	falseAlerts, point int
}

func (r realScore) perK() float64 { return 1000 * float64(r.falseAlerts) / float64(max(r.point, 1)) }

func scoreReal(series []labelled, find func(labelled) []int) realScore {
	var r realScore
	for _, s := range series {
		pred := find(s)
		r.n++
		r.f1 += F1(s.ann, pred, 5)
		r.cover += Covering(s.ann, pred, len(s.xs))
		r.falseAlerts += falseAlerts(s.ann, pred, 5)
		r.point += len(s.xs)
	}
	if r.n > 0 {
		r.f1 /= float64(r.n)
		r.cover /= float64(r.n)
	}
	return r
}

// falseAlerts counts predictions farther than margin from every
// annotation of every annotator.
func falseAlerts(ann [][]int, pred []int, margin int) int {
	n := 0
	for _, p := range pred {
		near := false
		for _, a := range ann {
			for _, t := range a {
				if abs(t-p) <= margin {
					near = true
				}
			}
		}
		if !near {
			n++
		}
	}
	return n
}

// realTable scores each detector on each half of series and returns the
// table and the scores by half and detector.
func realTable(set string, series []labelled, ds []detector) (string, map[string]map[string]realScore) {
	var b strings.Builder
	scores := map[string]map[string]realScore{}
	fmt.Fprintf(&b, "%-8s %-9s %-12s %4s %6s %6s %6s %8s\n", "data", "half", "detector", "n", "points", "F1", "cover", "FA/1000")
	for _, half := range []string{"train", "held-out", "all"} {
		var sub []labelled
		for _, s := range series {
			if half == "all" || heldOut(s.name) == (half == "held-out") {
				sub = append(sub, s)
			}
		}
		scores[half] = map[string]realScore{}
		for _, d := range ds {
			r := scoreReal(sub, d.find)
			scores[half][d.name] = r
			fmt.Fprintf(&b, "%-8s %-9s %-12s %4d %6d %6.3f %6.3f %8.2f\n", set, half, d.name, r.n, r.point, r.f1, r.cover, r.perK())
		}
	}
	return b.String(), scores
}

func TestRealSeriesTCPD(t *testing.T) {
	dir := os.Getenv("VNETBENCH_TCPD")
	if dir == "" {
		t.Skip("VNETBENCH_TCPD is not set: point it at a checkout of the Turing Change Point Dataset to score the detector on real labelled series (an opt-in evaluation; the data are not shipped)")
	}
	series, err := readTCPD(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) == 0 {
		t.Fatalf("no univariate annotated series under %s", dir)
	}
	ann, err := tcpdAnnotations(dir)
	if err != nil {
		t.Fatal(err)
	}
	mozilla := detector{"perfherder", func(s labelled) []int { return perfherder.detect(s.xs) }}
	table, scores := realTable("tcpd", series, detectors(append(namedLevels(), mozilla)...))
	t.Logf("TCPD, %d univariate series with their data here, of %d annotated (the rest are multivariate or fetched by TCPD's scripts):\n%s",
		len(series), len(ann), table)
	meetsTargets(t, "held-out", scores["held-out"], 0.72, 0.67)
}

// meetsTargets fails when the detector's mean F1 or covering is below
// the goal (issue 33's: 0.72 and 0.67 on real-world labelled series the
// detector was not tuned on, 0.70 and 0.70 on CI histories) or below
// binary segmentation, PELT or reporting nothing.
func meetsTargets(t *testing.T, half string, s map[string]realScore, f1, cover float64) {
	t.Helper()
	v := s["vnetbench"]
	if v.f1 < f1 || v.cover < cover {
		t.Errorf("%s: F1 %.3f, covering %.3f: below the goal (%.2f, %.2f)", half, v.f1, v.cover, f1, cover)
	}
	for _, d := range []string{"binseg", "pelt", "zero"} {
		if o := s[d]; v.f1 < o.f1 || v.cover < o.cover {
			t.Errorf("%s: F1 %.3f, covering %.3f: below %s (%.3f, %.3f)", half, v.f1, v.cover, d, o.f1, o.cover)
		}
	}
}

func TestRealSeriesPerf(t *testing.T) {
	dir := os.Getenv("VNETBENCH_PERFSERIES")
	if dir == "" {
		t.Skip("VNETBENCH_PERFSERIES is not set: point it at a directory of CI performance histories (*_timeseries_data.csv) to score the detector on them (an opt-in evaluation; the data are not shipped)")
	}
	series, err := readPerfSeries(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) == 0 {
		t.Fatalf("no *_timeseries_data.csv under %s", dir)
	}
	mozilla := detector{"perfherder", func(s labelled) []int { return perfherder.detect(s.xs) }}
	prod := detector{"production", func(s labelled) []int { return s.prod }}
	ds := detectors(append(namedLevels(), sensitivity("p 0.02", 0.02), mozilla, prod)...)
	table, scores := realTable("perf", series, ds)
	t.Logf("CI performance histories:\n%s\n%s", perfCounts(series), table)
	t.Logf("per series (F1 and covering; the labelled changes and each detector's change points):\n%s", perSeries(series, ds))
	// The seeded search was added for a miss seen on a held-out series
	// (docs/history.md), and Seeded compared on these series: the train
	// half is not held out, the held-out half nearly so.
	meetsTargets(t, "held-out", scores["held-out"], 0.70, 0.70)
}

// sensitivity is Default at another p threshold, as --sensitivity sets
// it.
func sensitivity(name string, alpha float64) detector {
	p := Default
	p.Alpha = alpha
	return detector{name, func(s labelled) []int { return indices(p.Detect(s.xs)) }}
}

// namedLevels are the detectors of --sensitivity's names other than
// Default's ("vnetbench" in the tables).
func namedLevels() []detector {
	var ds []detector
	for _, l := range Levels {
		if l.Alpha != Default.Alpha {
			ds = append(ds, sensitivity(l.Name, l.Alpha))
		}
	}
	return ds
}

// perfCounts says, per half, how many series, points, labelled changes
// (TP and FN) and production alerts (TP, FP and SP) the scores rest on.
func perfCounts(series []labelled) string {
	var b strings.Builder
	for _, half := range []string{"train", "held-out", "all"} {
		var n, points, truth, alerts int
		for _, s := range series {
			if half == "all" || heldOut(s.name) == (half == "held-out") {
				n++
				points += len(s.xs)
				truth += len(s.ann[0])
				alerts += len(s.prod)
			}
		}
		fmt.Fprintf(&b, "%-9s %d series, %d points, %d labelled changes, %d production alerts\n", half, n, points, truth, alerts)
	}
	return b.String()
}

// perSeries lists, for each series, its length, its labelled changes
// and each detector's F1, covering and change points: where a detector
// misses.
func perSeries(series []labelled, ds []detector) string {
	var b strings.Builder
	for _, s := range series {
		fmt.Fprintf(&b, "%s: %d points, truth %v\n", s.name, len(s.xs), s.ann[0])
		for _, d := range ds {
			if d.name == "zero" {
				continue
			}
			pred := d.find(s)
			fmt.Fprintf(&b, "  %-11s F1 %.3f cover %.3f %v\n", d.name, F1(s.ann, pred, 5), Covering(s.ann, pred, len(s.xs)), pred)
		}
	}
	return b.String()
}

// TestRealSeriesGrid prints the grid Default's minimum changes were
// chosen from (at p 0.005, the default then) and its correlation cap
// (at p 0.001, TestFalseAlertsStrongAR bounding it):
// TCPD's train half and the synthetic suite for each p threshold and
// largest noise correlation, then each minimum change and minimum short
// change at Default's p, with the worst false alert rate on stationary
// synthetic noise. The held-out half is printed for the chosen set only
// (TestRealSeriesTCPD), so it did not steer the choice. Default's p is
// chosen over both corpora (TestSensitivityChoice).
func TestRealSeriesGrid(t *testing.T) {
	dir := os.Getenv("VNETBENCH_TCPD")
	if dir == "" {
		t.Skip("VNETBENCH_TCPD is not set: point it at a checkout of the Turing Change Point Dataset to print the tuning grid (opt-in)")
	}
	series, err := readTCPD(dir)
	if err != nil {
		t.Fatal(err)
	}
	var train []labelled
	for _, s := range series {
		if !heldOut(s.name) {
			train = append(train, s)
		}
	}
	syn := suite(t, 1, 30)
	var b strings.Builder
	fmt.Fprintf(&b, "%6s %6s %6s %6s %9s %9s %9s %9s %8s\n", "p", "maxPhi", "effect", "short", "train F1", "cover", "synth F1", "cover", "FA/1000")
	row := func(p Params) {
		r := scoreReal(train, func(s labelled) []int { return indices(p.Detect(s.xs)) })
		sf, sc := synthScore(syn, p)
		fmt.Fprintf(&b, "%6.3f %6.2f %6.1f %6.1f %9.3f %9.3f %9.3f %9.3f %8.2f\n", p.Alpha, p.MaxPhi, p.MinEffect, p.ShortEffect, r.f1, r.cover, sf, sc, worstFalseAlerts(t, p))
	}
	// p and the correlation cap, the minimum sizes as Default's; then
	// the minimum sizes at Default's p and cap.
	for _, a := range []float64{0.001, 0.005, 0.01, 0.05} {
		for _, phi := range []float64{0.95, 0.8, 0.6, 0.5, 0.4, 0.3, 0} {
			p := Default
			p.Alpha, p.MaxPhi = a, phi
			row(p)
		}
	}
	for _, eff := range []float64{0, 0.5, 1, 1.5, 2} {
		for _, short := range []float64{0, 1, 2, 3, 4} {
			p := Default
			p.MinEffect, p.ShortEffect = eff, short
			row(p)
		}
	}
	t.Logf("TCPD train half (%d series) and %d synthetic series:\n%s", len(train), len(syn), b.String())
}

// synthScore is p's mean F1 and covering over synthetic series.
func synthScore(syn []synth, p Params) (f1, cover float64) {
	for _, s := range syn {
		pred := indices(p.Detect(s.xs))
		f1 += F1([][]int{s.truth}, pred, 5)
		cover += Covering([][]int{s.truth}, pred, len(s.xs))
	}
	n := float64(len(syn))
	return f1 / n, cover / n
}

// TestReadPerfSeries reads a history in the layout readPerfSeries takes,
// made here: the truth is the TP and FN rows, production's alerts the
// TP, FP and SP rows, and a row without a number is skipped.
func TestReadPerfSeries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "autoland1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The aggregated files lead with pandas' unnamed index column.
	csv := ",revision,value,push_timestamp,alert_summary_status_general\n" +
		"0,a,10,1,TN\n1,b,11,2,\n2,c,x,3,\n3,d,20,4,TP\n4,e,21,5,TN\n" +
		"5,f,30,6,FP\n6,g,5,7,FN\n7,h,6,8,SP\n"
	if err := os.WriteFile(filepath.Join(dir, "42_timeseries_data.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readPerfSeries(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d series, want 1", len(got))
	}
	s := got[0]
	if s.name != "42" || !slices.Equal(s.xs, []float64{10, 11, 20, 21, 30, 5, 6}) ||
		!slices.Equal(s.ann[0], []int{2, 5}) || !slices.Equal(s.prod, []int{2, 4, 6}) {
		t.Errorf("read %+v", s)
	}
}
