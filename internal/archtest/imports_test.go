package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// everything but runner/..., internal/session (a run of a scenario, above
// runner/lab)
// and cmd/....
func below(p string) bool {
	rel := strings.TrimPrefix(p, module+"/")
	return rel != "runner" && !strings.HasPrefix(rel, "runner/") && rel != "internal/session" && !strings.HasPrefix(rel, "cmd/")
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
// below both (the AF_XDP series' keys and table in internal/xsk/series,
// not in the afxdp plug-in that testpmd used to import). Its own subpackages
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

// A driver (the AF_XDP sockets, pktgen's /proc/net/pktgen driver) and the
// helpers below the workloads (processes, network namespaces) name no
// workload: they depend on no internal/workload package, the registry
// included, so that what a workload shares with another, or a lab VM's
// command drives, does not drag the registry along.
func TestDriversImportNoWorkload(t *testing.T) {
	pkgs := []string{"./internal/xsk", "./internal/workload/pktgen/driver", "./internal/hostnet", "./internal/proc"}
	lines := goList(t, append([]string{"-deps", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`}, pkgs...)...)
	checked := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 || !slices.Contains(pkgs, "./"+strings.TrimPrefix(f[0], module+"/")) {
			continue
		}
		checked++
		for _, d := range f[1:] {
			if d == module+"/internal/workload" || strings.HasPrefix(d, module+"/internal/workload/") {
				t.Errorf("%s depends on %s: a driver names no workload (go list -deps %s)", f[0], d, f[0])
			}
		}
	}
	if checked != len(pkgs) {
		t.Fatalf("checked %d of %d packages; go list's output was not understood", checked, len(pkgs))
	}
}

// Tests keep the arrows too: a package below the orchestrator imports no
// runner/..., internal/session or cmd/... in its tests either (a plug-in's plan
// lines and preflight are runner's to test: runner/plugins_test.go; the
// toy workload, taken through the runner's loop, lives in runner/toy).
func TestTestsBelowImportNoRunner(t *testing.T) {
	lines := goList(t, "-f", `{{.ImportPath}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}`, "./...")
	checked := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		checked++
		if !below(f[0]) {
			continue
		}
		for _, d := range f[1:] {
			if strings.HasPrefix(d, module) && !below(d) {
				t.Errorf("a test of %s imports %s: test it from above (runner's tests), not from below", f[0], d)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d packages; go list's output was not understood", checked)
	}
}

// guestSide are the files that run inside a guest or lab VM, where no
// harness and no executor runs: they start their programs with os/exec.
var guestSide = map[string]string{
	"internal/workload/iperf3/guest.go":      "the guest's iperf3 server (an agent op)",
	"internal/workload/vsock/guest_linux.go": "the guest's vsock redirector (an agent op)",
}

// Processes start through internal/proc's Executor (one place that puts a
// child in its own process group, kills it on cancel and reports its argv,
// exit and output): no other package imports os/exec, except code that
// runs inside a VM (guestSide) and test helpers (_test.go files,
// internal/testenv, internal/testsummary).
func TestOsExecOnlyInProc(t *testing.T) {
	root := filepath.Join("..", "..")
	allowed := []string{"internal/proc/", "internal/testenv/", "internal/testsummary/"}
	moduleFiles(t, parser.ImportsOnly, nil, func(rel string, _ *token.FileSet, f *ast.File) {
		for _, im := range f.Imports {
			if im.Path.Value != `"os/exec"` || guestSide[rel] != "" || slices.ContainsFunc(allowed, func(a string) bool { return strings.HasPrefix(rel, a) }) {
				continue
			}
			t.Errorf("%s imports os/exec: start processes through internal/proc's Executor (proc.Real{}.Run, .Start; proc.LookPath)", rel)
		}
	})
	for f := range guestSide {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("guestSide names %s: %v", f, err)
		}
	}
}

// A plug-in's subpackages (pktgen's /proc/net/pktgen driver) are its own:
// no package outside the plug-in imports them, tests included. A lab VM's
// command that needs pktgen asks the workload (pktgen.Flood).
func TestPluginSubpackagesArePrivate(t *testing.T) {
	pre := module + "/internal/workload/"
	lines := goList(t, "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}`, "./...")
	checked := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		checked++
		for _, d := range f[1:] {
			rest, ok := strings.CutPrefix(d, pre)
			plugin, sub, nested := strings.Cut(rest, "/")
			if !ok || !nested || sub == "" {
				continue
			}
			if !strings.HasPrefix(f[0], pre+plugin+"/") && f[0] != pre+plugin {
				t.Errorf("%s imports %s, the %s plug-in's own subpackage: ask the workload (its package)", f[0], d, plugin)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d packages; go list's output was not understood", checked)
	}
}
