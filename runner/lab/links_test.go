package lab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/linkcheck"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/internal/fakeqemu"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/vmimages"
)

// A lab run's every path (the outer run directory, lab/scenario.yaml,
// the lab VM's directory and console, the inner run directory the lab
// writes) with a symbolic link planted at it in a resumed run: nothing
// outside the run directory changes. Before, lab/scenario.yaml and the
// lab's directory were written through a link.
func TestLabWritesThroughNoLink(t *testing.T) {
	dir := t.TempDir()
	img, mods, bin := fakeqemu.Lab(t, dir, "6.1.0-99-fake")
	yaml := fmt.Sprintf(`
name: lablinks
kernels:
  - {label: b, image: %[1]s, modules: %[2]s}
backend: tap
guest: {kernel: {image: %[1]s}}
generator:
  trafgen: {duration: 1s}
repetitions: 2
timeouts: {boot: 1m, traffic: 1m}
`, img, mods)
	cells := loadCells(t, yaml)
	var run string // the run directory of the current Run
	ex := &fakeqemu.Exec{Script: func(string) []fakeqemu.Step {
		// The run inside writes its samples into the shared run
		// directory (through the same results package), then lab init
		// reports its exit and powers off.
		inner := filepath.Join(run, results.LabDir("b"))
		iw, err := results.Open(inner)
		if errors.Is(err, fs.ErrNotExist) || err != nil && strings.Contains(err.Error(), "no "+results.ResultsFile) {
			iw, err = results.Create(inner, results.Env{Run: "inner-b", KernelRelease: "6.1.0-99-fake"})
		}
		if err == nil {
			for _, c := range Inside(cells, "b") {
				if !iw.Done(c.Name, "b", c.Rep) {
					iw.Append(results.Sample{Cell: c.Name, Rep: c.Rep, Kernel: "b", Axes: c.Axes, Start: time.Now(), WindowS: 1,
						Metrics: map[metric.Key]float64{"tx_pps": 1000}})
				}
			}
			iw.Close()
		}
		return []fakeqemu.Step{
			{Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvInit, Kernel: "6.1.0-99-fake"})},
			{After: 20 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvStart})},
			{After: 50 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvExit})},
			{After: 20 * time.Millisecond, PowerOff: true},
		}
	}}
	labRun := func(d string, resume bool) error {
		run = d
		o := runner.Options{Dir: d, Scenario: "lablinks", Seed: 1, LockPath: filepath.Join(dir, "lock"), Exec: ex, Accel: qemu.TCG, Resume: resume}
		_, err := Run(t.Context(), cells, o, Inner{Scenario: "lablinks.yaml", ScenarioData: []byte(yaml), Binary: bin, Labels: []string{"b"}})
		return err
	}
	ref := filepath.Join(dir, "ref")
	if err := labRun(ref, false); err != nil {
		t.Fatalf("reference lab run: %v", err)
	}
	paths := linkcheck.Paths(t, ref)
	for _, want := range []string{results.LabScenario, results.LabConsole("b"), filepath.Join(results.LabDir("b"), results.ResultsFile)} {
		if !sortedHas(paths, want) {
			t.Fatalf("the lab run wrote %v, not %s", paths, want)
		}
	}
	// Each path's link points at its own victims, a file and a directory.
	outside := linkcheck.Outside(t, len(paths))
	for i, p := range paths {
		for _, kind := range []string{linkcheck.Files, linkcheck.Dirs} {
			d := filepath.Join(dir, fmt.Sprintf("run-%d-%s", i, kind))
			// A resumed run whose samples are all to do again.
			if out, err := exec.Command("cp", "-a", ref, d).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v: %s", err, out)
			}
			os.Truncate(filepath.Join(d, results.ResultsFile), 0)
			os.Truncate(filepath.Join(d, results.LabDir("b"), results.ResultsFile), 0)
			linkcheck.Plant(t, filepath.Join(d, p), linkcheck.Target(outside, kind, i))
			before := linkcheck.Tree(outside)
			err := labRun(d, true)
			if linkcheck.Tree(outside) != before {
				t.Errorf("a link at %s to %s: the lab run wrote outside its directory (it said %v)", p, kind, err)
			}
		}
	}
}

func sortedHas(s []string, v string) bool {
	i := sort.SearchStrings(s, v)
	return i < len(s) && s[i] == v
}
