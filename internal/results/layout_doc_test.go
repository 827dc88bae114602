package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/running.md's run-directory block names every console log a run
// keeps: each guest boot's, a guest's whose kernel faulted under TCG (kept
// when its sample ran again), and each lab VM's, the first one's too when
// its lab was booted again.
func TestRunningDocNamesConsoles(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "running.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(b), "## The run directory\n\n```\n")
	block, _, _ = strings.Cut(block, "```")
	for _, p := range []string{
		strings.Replace(ConsoleLog(0), "-0.", "-N.", 1),
		strings.Replace(FaultConsole("CELL", "KERNEL", 0), "/0-", "/REP-", 1),
		LabConsole("LABEL"),
		LabFirstConsole("LABEL"),
	} {
		if !strings.Contains(block, "  "+p+" ") && !strings.Contains(block, "  "+p+"\n") {
			t.Errorf("docs/running.md's run directory lacks %s:\n%s", p, block)
		}
	}
}

// docs/running.md defines cell_overhead_s in the words the metric's
// description and the harness table's legend use: the legend once said
// "setup + teardown", narrower than what the runner subtracts from the
// sample's wall time (a lab's turn, the counters' reads and the
// generator's start are overhead too).
func TestRunningDocDefinesOverhead(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "running.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	if want := "`cell_overhead_s` (" + OverheadDef; !strings.Contains(doc, want) {
		t.Errorf("docs/running.md does not define cell_overhead_s as %q", want)
	}
	m, _ := Lookup("cell_overhead_s")
	if m.Description != OverheadDef || !strings.Contains(m.HeaderNote, OverheadDef) {
		t.Errorf("cell_overhead_s: description %q, header note %q, want %q", m.Description, m.HeaderNote, OverheadDef)
	}
}
