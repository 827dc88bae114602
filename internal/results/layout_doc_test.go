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
