package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/ledger"
)

// writeLedgerFile writes a ledger file named ID.jsonl into dir: the owner
// line, then lines (entries), as the ledger package writes them.
func writeLedgerFile(t *testing.T, dir string, o ledger.Owner, lines ...string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"owner": o})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, o.ID+".jsonl")
	if err := os.WriteFile(p, []byte(string(b)+"\n"+strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A process that ends after recording all it made gone but before its
// ledger's file goes (qemu.Launch records a QEMU's exit from a goroutine)
// leaves a settled ledger: doctor counts those of owners that are gone in
// one line and doctor --clean removes exactly them. A live owner's settled
// ledger, a dead owner's ledger that lists something kept, and every file
// that is not a ledger (a link, a FIFO, junk) stay; the files that are
// no ledger are named as skipped.
func TestDoctorCleanRemovesSettledLedgers(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	t.Setenv(ledger.DirEnv, dir)
	t.Setenv("TMPDIR", t.TempDir())
	me, err := ledger.StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	boot := ledger.BootID()
	dead := ledger.Owner{ID: "vnbdeadsettled", PID: ended.Process.Pid, Start: 1, Boot: boot, Argv: []string{"vnetbench", "run"}}
	reused := ledger.Owner{ID: "vnbreusedsettled", PID: os.Getpid(), Start: me + 1, Boot: boot} // its pid is this process's now
	live := ledger.Owner{ID: "vnblivesettled", PID: os.Getpid(), Start: me, Boot: boot}
	deadBusy := ledger.Owner{ID: "vnbdeadbusy", PID: ended.Process.Pid, Start: 1, Boot: boot}
	deadGone := ledger.Owner{ID: "vnbdeadgone", PID: ended.Process.Pid, Start: 1, Boot: boot}
	vm := `{"seq":1,"kind":"vm","name":"vnb-x","pid":1,"start":5,"state":"made"}`
	vmGone := `{"seq":1,"kind":"vm","state":"gone"}`
	settled := []string{
		writeLedgerFile(t, dir, dead, vm, vmGone),
		writeLedgerFile(t, dir, reused, vm, vmGone),
	}
	// A directory without the ledger's marker is not provably the run's:
	// doctor keeps it, and its ledger with it.
	unmarked := filepath.Join(other, "vnb-unmarked")
	os.Mkdir(unmarked, 0o700)
	dirEntry := func(path string) string {
		return `{"seq":1,"kind":"dir","name":"` + path + `","state":"made"}`
	}
	kept := []string{
		writeLedgerFile(t, dir, live, vm, vmGone),
		writeLedgerFile(t, dir, deadBusy, dirEntry(unmarked)),
	}
	// Its directory is gone already: the orphan path drops it, in the count.
	gone := writeLedgerFile(t, dir, deadGone, dirEntry(filepath.Join(other, "vnb-gone")))
	// Not ledgers: a link to a dead owner's settled ledger outside, a
	// FIFO, a file with no owner line, one with another's name, junk.
	outside := writeLedgerFile(t, other, ledger.Owner{ID: "vnboutside", PID: ended.Process.Pid, Start: 1, Boot: boot}, vm, vmGone)
	junk := map[string]string{
		"vnblink.jsonl":    "a symbolic link",
		"vnbfifo.jsonl":    "not a regular file",
		"vnbnoowner.jsonl": "no owner line",
		"vnbrenamed.jsonl": "its owner line names ledger vnbdeadsettled",
		"notes.txt":        "not a ledger's name",
	}
	if err := os.Symlink(outside, filepath.Join(dir, "vnblink.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "vnbfifo.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "vnbnoowner.jsonl"), []byte(vmGone+"\n"), 0o600)
	b, _ := os.ReadFile(settled[0])
	os.WriteFile(filepath.Join(dir, "vnbrenamed.jsonl"), b, 0o600)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello\n"), 0o600)

	var out, errb bytes.Buffer
	if err := run(t.Context(), []string{"doctor", "--leftovers"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	list := out.String()
	t.Logf("doctor --leftovers:\n%s", list)
	if !strings.Contains(list, "3 ledgers of ended vnetbench processes list nothing that still exists") {
		t.Errorf("doctor does not count the 2 settled ledgers and the one whose directory is gone as 3")
	}
	for name, why := range junk {
		if !strings.Contains(list, "skipped "+filepath.Join(dir, name)+": "+why) {
			t.Errorf("doctor does not say it skipped %s (%s)", name, why)
		}
	}
	out.Reset()
	if err := run(t.Context(), []string{"doctor", "--clean"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	clean := out.String()
	t.Logf("doctor --clean:\n%s", clean)
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	for _, p := range append(settled, gone) {
		if exists(p) {
			t.Errorf("doctor --clean left %s", p)
		}
	}
	for _, p := range settled {
		if !strings.Contains(clean, "removed ledger "+p) {
			t.Errorf("doctor --clean does not say it removed %s", p)
		}
	}
	for _, p := range append(kept, outside, unmarked) {
		if !exists(p) {
			t.Errorf("doctor --clean removed %s", p)
		}
	}
	for name := range junk {
		if !exists(filepath.Join(dir, name)) {
			t.Errorf("doctor --clean removed %s, which is no ledger", name)
		}
	}
	out.Reset()
	if err := run(t.Context(), []string{"doctor", "--leftovers"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "of ended vnetbench processes") {
		t.Errorf("after the clean doctor still counts ended ledgers:\n%s", s)
	}
}
