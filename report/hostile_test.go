package report

import (
	"bytes"
	"encoding/csv"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

// hostile is a run whose kernel labels, cell names and axis values (all
// read from files the report did not write) hold HTML, markdown, a
// terminal escape sequence and spreadsheet formulas.
func hostile() *results.Set {
	set := &results.Set{Env: map[string]*results.Env{}}
	kernels := []string{"<script>alert(1)</script>", "=HYPERLINK(\"http://x\")\x1b[2J"}
	for _, k := range kernels {
		for rep := range 4 {
			set.Samples = append(set.Samples, results.Sample{Cell: "tap/<img src=x onerror=alert(1)>", Kernel: k, Rep: rep, Emulated: true,
				Axes:    map[string]string{"backend": "tap", "generator": "@SUM(A1)\x1b]0;title\x07", "qdisc": "+cmd|' /C calc'!A0"},
				Metrics: map[metric.Key]float64{"tx_pps": 1000 + float64(rep), "lost_pps": -1 - float64(rep)}})
		}
	}
	return set
}

// Each format escapes what its readers would act on: markdown leaves no
// raw HTML tag (title, EMULATED line, cells), text no control character
// (a terminal escape sequence), CSV no field a spreadsheet takes for a
// formula. Before, all three passed them through.
func TestRenderEscapes(t *testing.T) {
	set := hostile()
	r, err := Build(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	render := func(format string) string {
		var b bytes.Buffer
		if err := Render(&b, set, r, format, Unicode); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		return b.String()
	}

	md := render("markdown")
	if tag := regexp.MustCompile(`(?i)(^|[^\\])<\s*(script|img)`).FindString(md); tag != "" {
		t.Errorf("markdown has a raw HTML tag %q:\n%s", tag, md)
	}
	for _, want := range []string{`\<script\>alert(1)\</script\>`, `EMULATED`} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}

	txt := render("text")
	if i := strings.IndexFunc(txt, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f }); i >= 0 {
		t.Errorf("text output has control character %q at %d", txt[i], i)
	}
	if !strings.Contains(txt, `\x1b[2J`) {
		t.Errorf("text output does not show the escape sequence as text:\n%s", txt)
	}

	rows, err := csv.NewReader(strings.NewReader(render("csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	negative := false
	for _, row := range rows {
		for _, f := range row {
			if f != "" && strings.ContainsRune("=+@", rune(f[0])) || strings.HasPrefix(f, "-") && !regexp.MustCompile(`^-[0-9.e+-]+$`).MatchString(f) {
				t.Errorf("CSV field %q would be a formula", f)
			}
			negative = negative || strings.HasPrefix(f, "-")
		}
	}
	if !negative {
		t.Error("no negative number left in the CSV: csvSafe changed numbers, or the fixture has none")
	}
}

func TestCSVSafe(t *testing.T) {
	for in, want := range map[string]string{"=1+1": "'=1+1", "-3.5": "-3.5", "-x": "'-x", "+1e3": "+1e3", "@a": "'@a", "\tx": "'\tx", "ok": "ok", "": ""} {
		if got := csvSafe(in); got != want {
			t.Errorf("csvSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// More columns than MaxColumns is bad input, said in one line, at once
// (before: n x n tables, 1,000 distinct kernels took 12.6 s and 1.6 GB);
// MaxColumns columns build.
func TestReportTooManyColumns(t *testing.T) {
	_, err := Build(distinctSet(1000, 1000), Options{})
	if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "1000 columns") || strings.Contains(err.Error(), "\n") {
		t.Errorf("1000 kernels: %v; want one line of bad input naming the 1000 columns", err)
	}
	if _, err := Build(distinctSet(MaxColumns, MaxColumns), Options{}); err != nil {
		t.Errorf("%d kernels: %v", MaxColumns, err)
	}
}
