package report

import "github.com/vnetbench/vnetbench/internal/results"

// Runs is a set of loaded samples with each kernel's environment: what
// Build, Render and CompareRuns read. It is the results store's set
// (internal to the module) under a public name, so a program outside the
// module can load runs and render them:
//
//	runs, err := report.Load("runs/stock", "runs/patched")
//	r, err := report.Build(runs, report.Options{By: "kernel"})
//	err = report.Render(os.Stdout, runs, r, "markdown", report.ASCII)
//
// The stable contract for other tools is still the files: results.jsonl,
// env.json and the JSON, CSV and benchfmt outputs.
type Runs = results.Set

// Load reads run directories (results.jsonl and env.json) and Go
// benchmark format files into one set; a run recorded under one label by
// two different kernels is bad input.
func Load(paths ...string) (*Runs, error) { return results.Load(paths...) }
