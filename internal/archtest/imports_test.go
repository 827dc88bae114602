package archtest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

const module = "github.com/vnetbench/vnetbench"

// goList runs go list in the module root with a -f template, one line a
// package.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	gobin := testenv.NeedCommand(t, "go", "")
	cmd := exec.CommandContext(t.Context(), gobin, append([]string{"list"}, args...)...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// below says whether p is one of the packages below the orchestrator:
// everything but runner/..., bench (a run of a scenario, above runner/lab)
// and cmd/....
func below(p string) bool {
	rel := strings.TrimPrefix(p, module+"/")
	return rel != "runner" && !strings.HasPrefix(rel, "runner/") && rel != "bench" && !strings.HasPrefix(rel, "cmd/")
}

// No package below the orchestrator depends on runner/..., directly or
// through another package: the workloads own their drivers, shared helpers
// (processes, network namespaces, AF_XDP sockets) live below the
// workloads, and metric definitions below both the store and the
// workloads. Nothing imports cmd.
func TestNothingBelowImportsRunner(t *testing.T) {
	lines := goList(t, "-deps", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...")
	checked := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		for _, d := range f[1:] {
			rel := strings.TrimPrefix(d, module+"/")
			if strings.HasPrefix(rel, "cmd/") {
				t.Errorf("%s depends on %s: nothing imports cmd", f[0], d)
			}
			if below(f[0]) && strings.HasPrefix(d, module) && !below(d) {
				t.Errorf("%s depends on %s: packages below the orchestrator must not (go list -deps %s)", f[0], d, f[0])
			}
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("checked %d packages; go list's output was not understood", checked)
	}
}

// A workload plug-in imports no other plug-in: what two share lives
// below both (the AF_XDP series' keys and table in internal/xsk, not in
// the afxdp plug-in that testpmd used to import). Its own subpackages
// (pktgen's driver) are its own; internal/workload/all imports them all.
func TestWorkloadsImportNoSibling(t *testing.T) {
	pre := module + "/internal/workload/"
	lines := goList(t, "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./internal/workload/...")
	if len(lines) < 6 {
		t.Fatalf("%d workload packages; go list's output was not understood", len(lines))
	}
	for _, l := range lines {
		f := strings.Fields(l)
		own, ok := strings.CutPrefix(f[0], pre)
		if !ok || own == "all" {
			continue
		}
		own, _, _ = strings.Cut(own, "/")
		for _, d := range f[1:] {
			other, ok := strings.CutPrefix(d, pre)
			if !ok {
				continue
			}
			if top, _, _ := strings.Cut(other, "/"); top != own {
				t.Errorf("workload %s imports %s: move what they share below both", f[0], d)
			}
		}
	}
}
