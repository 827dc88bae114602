package qemu

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestExecURI: the state's path is quoted for the shell QEMU runs exec:
// with, and a path the quotes cannot hold is refused.
func TestExecURI(t *testing.T) {
	if u, err := execURI("cat > ", "/run dir/state"); err != nil || u != "exec:cat > '/run dir/state'" {
		t.Errorf("got %q, %v", u, err)
	}
	for _, bad := range []string{"", "/a'b", "/a\nb"} {
		if u, err := execURI("cat ", bad); err == nil {
			t.Errorf("path %q: got %q, want an error", bad, u)
		}
	}
}

// TestArgsIncoming: a VM started for a saved state waits paused for it.
func TestArgsIncoming(t *testing.T) {
	a := Args(Config{Incoming: true})
	if !slices.Equal(a[len(a)-3:], []string{"-S", "-incoming", "defer"}) {
		t.Errorf("argv ends %q", a[len(a)-3:])
	}
	if a := Args(Config{}); slices.Contains(a, "-incoming") {
		t.Errorf("a boot's argv has -incoming: %q", a)
	}
}

// migratingQEMU plays QEMU 7.2's QMP side of a save: query-migrate says
// "completed" while the run state stays finish-migrate for lag more
// query-status calls, and a cont until then is refused as QEMU refuses it.
func migratingQEMU(t *testing.T, lag int) (path string, log *[]string) {
	t.Helper()
	log = new([]string)
	state := "running"
	path = serveQMP(t, func(cmd string) string {
		r := `{"return": {}}`
		switch cmd {
		case "stop":
			state = "paused"
		case "migrate":
			state = "finish-migrate"
		case "query-migrate":
			r = `{"return": {"status": "completed"}}`
		case "query-status":
			if state == "finish-migrate" && lag == 0 {
				state = "postmigrate"
			}
			lag--
			r = fmt.Sprintf(`{"return": {"status": %q, "running": false}}`, state)
		case "cont":
			if state == "finish-migrate" {
				r = `{"error": {"class": "GenericError", "desc": "Migration is not finalized yet"}}`
			} else {
				state = "running"
			}
		}
		*log = append(*log, cmd+" -> "+state)
		return r
	})
	return path, log
}

// TestSaveStateWaitsForFinishMigrate: a cont sent as soon as query-migrate
// said "completed" met "Migration is not finalized yet" in CI and failed
// the lab; SaveState waits for QEMU to leave finish-migrate, then resumes.
func TestSaveStateWaitsForFinishMigrate(t *testing.T) {
	path, log := migratingQEMU(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	q, err := DialQMP(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	vm := &VM{qmp: q, proc: &exited{done: make(chan struct{})}}
	if err := SaveState(ctx, vm, filepath.Join(t.TempDir(), "state")); err != nil {
		t.Fatalf("SaveState: %v (QMP: %q)", err, *log)
	}
	if last := (*log)[len(*log)-1]; last != "cont -> running" {
		t.Errorf("last QMP command: %q, want a cont that runs the guest (QMP: %q)", last, *log)
	}
}
