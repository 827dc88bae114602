package runner

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/testenv"
)

func TestOwnerPID(t *testing.T) {
	for name, want := range map[string]int{"vnb-123-abcd0123": 123, "vnbprobe-77-3": 77, "vnb-probe-42": 42, "vnb-lab-9-100": 9, "vnb-abcdef": 0, "vnb-0123-1": 1} {
		if got := ownerPID(name); got != want {
			t.Errorf("ownerPID(%q) = %d, want %d", name, got, want)
		}
	}
}

// What a killed run leaves is found, and --clean removes only what no
// live process owns or uses: a namespace or directory named after a dead
// pid goes; one of a running process, one a process is inside and a
// directory a process listens in stay.
func TestLeftoversClean(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces")
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead, me := gone.Process.Pid, os.Getpid()
	names := map[string]string{ // netns -> what should happen
		fmt.Sprintf("vnb-%d-lt0", dead): "removed",
		fmt.Sprintf("vnb-%d-lt1", me):   "running",
		fmt.Sprintf("vnb-%d-lt2", dead): "uses it",
	}
	for n := range names {
		ns, err := hostnet.CreateNetns(n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ns.Delete() })
	}
	inside := exec.Command("ip", "netns", "exec", fmt.Sprintf("vnb-%d-lt2", dead), "sleep", "60")
	if err := inside.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inside.Process.Kill(); inside.Wait() })
	tmp := t.TempDir()
	dirs := map[string]string{
		filepath.Join(tmp, fmt.Sprintf("vnb-%d-1", dead)): "removed",
		filepath.Join(tmp, fmt.Sprintf("vnb-%d-2", me)):   "running",
		filepath.Join(tmp, fmt.Sprintf("vnb-%d-3", dead)): "listens",
	}
	for d := range dirs {
		os.Mkdir(d, 0o755)
	}
	ln, err := net.Listen("unix", filepath.Join(tmp, fmt.Sprintf("vnb-%d-3", dead), "qmp.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The inner process may take a moment to enter the namespace.
	var mine []Leftover
	for range 50 {
		mine = mine[:0]
		for _, l := range findLeftovers(hostnet.NetnsDir, tmp) {
			if names[l.Name] != "" || dirs[l.Name] != "" {
				mine = append(mine, l)
			}
		}
		if len(mine) == 6 && !strings.Contains(fmt.Sprint(mine), "lt2 (its process is gone)") {
			break
		}
		exec.Command("sleep", "0.1").Run()
	}
	if len(mine) != 6 {
		t.Fatalf("found %v, want the 3 namespaces and 3 directories", mine)
	}
	removed, err := CleanLeftovers(mine)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range mine {
		want := names[l.Name] + dirs[l.Name]
		wasRemoved := false
		for _, r := range removed {
			wasRemoved = wasRemoved || r.Name == l.Name
		}
		if (want == "removed") != wasRemoved || want != "removed" && !strings.Contains(l.Busy, want) {
			t.Errorf("%s: removed %v, busy %q; want %s", l.Name, wasRemoved, l.Busy, want)
		}
		_, serr := os.Stat(l.Name)
		if l.Kind == "netns" {
			_, serr = os.Stat(filepath.Join(hostnet.NetnsDir, l.Name))
		}
		if wasRemoved != (serr != nil) {
			t.Errorf("%s: removed %v but stat says %v", l.Name, wasRemoved, serr)
		}
	}
}
