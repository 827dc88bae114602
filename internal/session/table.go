package session

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/report"
)

// printTable renders the run with the report package's text renderer.
func printTable(stdout, stderr io.Writer, dir string) {
	set, err := results.Load(dir)
	if err != nil {
		fmt.Fprintf(stderr, "vnetbench: warning: report: %v\n", err)
		return
	}
	r, err := report.Build(set, report.Options{By: "kernel", Top: 10})
	if err != nil {
		fmt.Fprintf(stderr, "vnetbench: warning: report: %v\n", err)
		return
	}
	st, _ := report.ParseStyle("ascii")
	fmt.Fprintln(stdout)
	if err := report.Render(stdout, set, r, "text", st); err != nil {
		fmt.Fprintf(stderr, "vnetbench: warning: report: %v\n", err)
	}
	if len(r.LatencyRuns) > 0 {
		writePlots(stdout, stderr, dir, r)
	}
}

// plotsFile is the HTML report a run with the latency probe writes into
// its run directory: the tables and the probe's plots.
const plotsFile = "report.html"

func writePlots(stdout, stderr io.Writer, dir string, r *report.Report) {
	var b bytes.Buffer
	path := filepath.Join(dir, plotsFile)
	err := report.WriteHTML(&b, r)
	if err == nil {
		err = os.WriteFile(path, b.Bytes(), 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vnetbench: warning: latency plots: %v\n", err)
		return
	}
	fmt.Fprintf(stdout, "latency plots (RTT CDF, time series per sample): %s\n", path)
}
