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
