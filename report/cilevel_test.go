package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The order statistics give a median interval only some levels: at 6
// runs [min, max], which misses the median only when all 6 runs fall on
// one side of it, 2/2^6, so 96.875%. Every output names that level.
func TestCILevelIsTheIntervalsOwn(t *testing.T) {
	vals := []float64{450000, 451000, 452000, 452500, 453000, 454000}
	if st := Summarize(vals, true); st.CILevel != 1-2.0/64 || ciPct(st.CILevel) != "97%" || st.Lo != 450000 || st.Hi != 454000 {
		t.Errorf("n=6: level %v (%s), interval %v..%v; want 0.96875 (97%%), min..max", st.CILevel, ciPct(st.CILevel), st.Lo, st.Hi)
	}
	// Too few runs for an interval: no level either, in Stats and in
	// CSV (a 5-run cell once wrote ci_level 0.96875 beside an empty
	// interval).
	for n := 0; n < minCIRuns; n++ {
		st := Summarize(make([]float64, n), false)
		if st.CIFinite() || st.CILevel != 0 {
			t.Errorf("n=%d: interval %v..%v level %v, want none and level 0", n, st.Lo, st.Hi, st.CILevel)
		}
	}
	for n := minCIRuns; n <= 200; n++ {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i)
		}
		st := Summarize(v, false)
		// Never named under 95% nor, rounded up, 100%.
		if !st.CIFinite() || st.CILevel < Confidence || st.CILevel >= 0.995 {
			t.Errorf("n=%d: level %v named %s, want a finite interval named 95%% to 99%%", n, st.CILevel, ciPct(st.CILevel))
		}
	}
}

// The same comparison names its intervals' confidence alike in the text
// legend, the HTML caption and the JUnit failure: the legend once said a
// fixed 95% where JUnit said the 6 runs' 97%.
func TestOutputsNameOneCILevel(t *testing.T) {
	base := []float64{450000, 451000, 452000, 452500, 453000, 454000}
	new6 := []float64{405000, 405800, 406500, 407200, 408000, 408600}
	new10 := append(slices.Clone(new6), 406000, 407000, 405500, 406100)
	for _, tc := range []struct {
		new   []float64
		name  string   // the legend's and caption's name of the intervals
		junit []string // the levels JUnit names, base's then new's
	}{
		{new6, "97% confidence interval of the median", []string{"97%", "97%"}},
		{new10, "confidence interval of the median (97% at 6 runs, 98% at 10 runs)", []string{"97%", "98%"}},
	} {
		dir := t.TempDir()
		res, err := CompareRuns(benchSide(t, dir, "base", base), benchSide(t, dir, "new", tc.new), CompareOptions{Gates: mustGates(t, "tx_pps<-3%")})
		if err != nil {
			t.Fatal(err)
		}
		var text, html, junit bytes.Buffer
		if err := WriteText(&text, res.Report, ASCII); err != nil {
			t.Fatal(err)
		}
		if err := WriteHTML(&html, res.Report); err != nil {
			t.Fatal(err)
		}
		if err := WriteJUnitDecisions(&junit, "compare", res.Decisions); err != nil {
			t.Fatal(err)
		}
		flat := strings.Join(strings.Fields(text.String()), " ")
		if !strings.Contains(flat, "+- = "+tc.name) {
			t.Errorf("%d runs: the text legend does not say %q:\n%s", len(tc.new), tc.name, text.String())
		}
		if !strings.Contains(html.String(), "error bars: "+tc.name+".") {
			t.Errorf("%d runs: the HTML caption does not say %q", len(tc.new), tc.name)
		}
		var got []string
		for _, m := range regexp.MustCompile(`(\d+%) CI \d`).FindAllStringSubmatch(junit.String(), -1) {
			got = append(got, m[1])
		}
		// The failure's text and system-out say both sides each.
		if want := append(slices.Clone(tc.junit), tc.junit...); !slices.Equal(got, want) {
			t.Errorf("%d runs: JUnit names %v, want %v:\n%s", len(tc.new), got, want, junit.String())
		}
	}
}

// benchSide loads values as the runs of one cell of a benchfmt file
// named kernel in dir.
func benchSide(t *testing.T, dir, kernel string, values []float64) *Runs {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "kernel: %s\n", kernel)
	for _, v := range values {
		fmt.Fprintf(&b, "BenchmarkVnetbench/pktgen-t1 1 %g tx_pps\n", v)
	}
	path := filepath.Join(dir, kernel+".bench")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func mustGates(t *testing.T, s string) []Gate {
	t.Helper()
	g, err := ParseGates(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Run counts that give one level are one list, as people say it (the
// doc's "98% at 7 and 10 runs").
func TestCINameListsRunCounts(t *testing.T) {
	var sts []*Stats
	for _, n := range []int{13, 6, 7, 10, 7} {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i)
		}
		st := Summarize(v, false)
		sts = append(sts, &st)
	}
	if got, want := CIName(sts), "confidence interval of the median (97% at 6 runs, 98% at 7, 10 and 13 runs)"; got != want {
		t.Errorf("CIName = %q, want %q", got, want)
	}
}
