package report_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/vnetbench/vnetbench/report"
)

// A program outside the module loads runs and renders their tables with
// report's own names only.
func Example() {
	runs, err := report.Load("testdata/generated/stock", "testdata/generated/patched")
	if err != nil {
		log.Fatal(err)
	}
	r, err := report.Build(runs, report.Options{By: "kernel"})
	if err != nil {
		log.Fatal(err)
	}
	var b strings.Builder
	if err := report.Render(&b, runs, r, "text", report.ASCII); err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.Contains(b.String(), "stock"), strings.Contains(b.String(), "patched"))
	// Output: true true
}

// Comparing two samples and gating runs takes report's MinEffect, parsed
// from the --min-effect syntax; a report's environments are report.Env.
func ExampleCompare() {
	min, err := report.ParseMinEffect("2%")
	if err != nil {
		log.Fatal(err)
	}
	d := report.Compare([]float64{450, 452, 451}, []float64{405, 406, 404}, true, min)
	fmt.Println(d.DeltaString())

	runs, err := report.Load("testdata/generated/stock", "testdata/generated/patched")
	if err != nil {
		log.Fatal(err)
	}
	p, err := report.Decide(runs, nil, report.DefaultMinEffect, nil)
	if err != nil {
		log.Fatal(err)
	}
	r, err := report.Build(runs, report.Options{MinEffect: min})
	if err != nil {
		log.Fatal(err)
	}
	var env *report.Env = r.Env["stock"]
	fmt.Println(len(p.Decisions) > 0, env.CPUModel != "")
	// Output:
	// -10.20%
	// true true
}
