package ledger

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A ledger records before, lists what a killed owner left (only that),
// and a pid that a new process reuses does not keep a dead owner alive.
func TestLedgerOwnersAndOrphans(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(DirEnv, dir)
	me, err := StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	alive := Owner{ID: "vnbalive", PID: os.Getpid(), Start: me, Boot: BootID()}
	reused := alive
	reused.ID, reused.Start = "vnbreused", me+1 // the same pid, another process
	gone := exec.Command("true")
	gone.Run()
	dead := Owner{ID: "vnbdead", PID: gone.Process.Pid, Start: 1, Boot: BootID()}
	if !alive.Alive() || reused.Alive() || dead.Alive() {
		t.Fatalf("alive %v, reused pid %v, dead %v; want true, false, false", alive.Alive(), reused.Alive(), dead.Alive())
	}
	write := func(o Owner, lines ...line) {
		var b strings.Builder
		all := append([]line{{Owner: &o}}, lines...)
		for _, l := range all {
			j, _ := json.Marshal(l)
			b.Write(append(j, '\n'))
		}
		os.WriteFile(filepath.Join(dir, o.ID+".jsonl"), []byte(b.String()), 0o600)
	}
	ns := Entry{Seq: 1, Kind: Netns, Name: "vnb-1-a", State: "intent"}
	made := ns
	made.State, made.Ino = "made", 42
	tmp := Entry{Seq: 2, Kind: Dir, Name: "/tmp/x", State: "made"}
	done := Entry{Seq: 2, Kind: Dir, State: "gone"}
	write(alive, line{Entry: &ns})
	write(reused, line{Entry: &ns}, line{Entry: &made}, line{Entry: &tmp})
	write(dead, line{Entry: &tmp}, line{Entry: &done}, line{RunID: "r1"})
	fd, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	orphans, live := fd.Orphans, fd.Live
	if live != 1 || len(orphans) != 2 || orphans[0].Entry.Ino != 42 || orphans[1].Entry.Name != "/tmp/x" || orphans[0].Owner.ID != "vnbreused" {
		t.Fatalf("live %d, orphans %+v", live, orphans)
	}
	// Resolving both removes the ledger file; the dead owner's, with
	// nothing left, lists nothing.
	for _, o := range orphans {
		if err := Resolved(o); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "vnbreused.jsonl")); err == nil {
		t.Errorf("the resolved ledger is still there")
	}
}

// MkdirTemp records the directory before making it, marks it with the
// ledger's ID, and its remove records it gone: the ledger file goes.
func TestMkdirTemp(t *testing.T) {
	t.Setenv(DirEnv, t.TempDir())
	t.Setenv("TMPDIR", t.TempDir())
	d, remove, err := MkdirTemp("vnb-test")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(d, MarkerFile)); strings.TrimSpace(string(b)) != ID() {
		t.Errorf("marker %q, want %s", b, ID())
	}
	files, _ := filepath.Glob(filepath.Join(Path(), "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("ledger files %v", files)
	}
	b, _ := os.ReadFile(files[0])
	if !strings.Contains(string(b), `"kind":"dir","name":"`+d+`","state":"intent"`) {
		t.Errorf("ledger:\n%s", b)
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d); err == nil {
		t.Error("directory left")
	}
	if files, _ := filepath.Glob(filepath.Join(Path(), "*.jsonl")); len(files) != 0 {
		t.Errorf("ledger left with nothing in it: %v", files)
	}
}

// An owner that has ended but is not reaped yet (a zombie) is not alive:
// it holds nothing, and its resources are leftovers.
func TestZombieOwnerIsGone(t *testing.T) {
	cmd := exec.Command("sleep", "3600")
	if err := cmd.Start(); err != nil {
		t.Skipf("sleep: %v", err)
	}
	pid := cmd.Process.Pid
	start, err := StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	o := Owner{ID: "vnbzombie", PID: pid, Start: start, Boot: BootID()}
	if !o.Alive() {
		t.Fatalf("a running owner is not alive")
	}
	// Kill it and wait (without reaping) until it is a zombie.
	cmd.Process.Kill()
	var si unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &si, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	if o.Alive() {
		t.Errorf("a zombie owner is alive")
	}
	if _, err := StartTime(pid); !errors.Is(err, ErrEnded) {
		t.Errorf("StartTime of a zombie: %v, want ErrEnded", err)
	}
}

// Scan finds a dead owner's ledger that lists nothing (settled), and
// RemoveSettled removes its file only while it still is: not once its
// owner is found alive or it lists something again.
func TestRemoveSettledChecksAgain(t *testing.T) {
	dir := t.TempDir()
	me, err := StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	o := Owner{ID: "vnbsettled", PID: os.Getpid(), Start: me + 1, Boot: BootID()} // a reused pid: gone
	p := filepath.Join(dir, o.ID+".jsonl")
	write := func(o Owner, lines ...string) {
		b, _ := json.Marshal(line{Owner: &o})
		os.WriteFile(p, []byte(string(b)+"\n"+strings.Join(lines, "")), 0o600)
	}
	vm := `{"seq":1,"kind":"vm","name":"vnb-x","pid":1,"start":5,"state":"made"}` + "\n"
	gone := `{"seq":1,"kind":"vm","state":"gone"}` + "\n"
	write(o, vm, gone)
	fd, err := Scan(dir)
	if err != nil || len(fd.Settled) != 1 || fd.Settled[0].File != p || len(fd.Orphans)+len(fd.Skipped)+fd.Live != 0 {
		t.Fatalf("Scan: %+v, %v; want one settled ledger, %s", fd, err, p)
	}
	s := fd.Settled[0]
	alive := o
	alive.Start = me
	write(alive, vm, gone)
	if err := RemoveSettled(s); err == nil {
		t.Errorf("RemoveSettled removed the ledger of a live owner")
	}
	write(o, vm, gone, vm)
	if err := RemoveSettled(s); err == nil {
		t.Errorf("RemoveSettled removed a ledger that lists a VM")
	}
	write(o, vm, gone, "{torn\n")
	if err := RemoveSettled(s); err == nil {
		t.Errorf("RemoveSettled removed a ledger with a line that is no ledger line")
	}
	if _, err := os.Lstat(p); err != nil {
		t.Fatalf("the ledger is gone: %v", err)
	}
	write(o, vm, gone)
	if err := RemoveSettled(s); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(p); err == nil {
		t.Errorf("RemoveSettled left the settled ledger")
	}
}
