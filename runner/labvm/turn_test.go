package labvm

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/runner/internal/fakeqemu"
	"github.com/vnetbench/vnetbench/vmimages"
)

// holdTurns is a Turns that grants a lab its turn when the test says so,
// checking then that the lab is paused and that its turn file does not
// exist yet.
type holdTurns struct {
	t       *testing.T
	ex      *fakeqemu.Exec
	file    string
	hold    chan struct{} // closed by the test: grant
	readies []string
}

func (h *holdTurns) Ready(label string) <-chan struct{} {
	h.readies = append(h.readies, label)
	ch := make(chan struct{})
	go func() {
		<-h.hold
		if ps := h.ex.Procs(); len(ps) != 1 || !ps[0].Paused() {
			h.t.Errorf("lab not paused while it waits for its turn")
		}
		if _, err := os.Stat(h.file); err == nil {
			h.t.Errorf("turn file %s exists before the turn", h.file)
		}
		close(ch)
	}()
	return ch
}

// A lab whose run inside announces it is ready to measure is paused (QMP
// stop) until its turn, then gets the turn file and goes on (QMP cont).
// The pause, here longer than the run's silence limit and its deadline,
// counts against neither; a stale turn file of an earlier lab is gone
// before the VM boots, and the lab's own after it ends.
func TestLabPausedUntilItsTurn(t *testing.T) {
	script := append(append([]fakeqemu.Step{}, labUp...),
		fakeqemu.Step{After: 20 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvTurn})},
		fakeqemu.Step{After: 20 * time.Millisecond, Line: "measuring"},
		fakeqemu.Step{After: 20 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvExit})},
		fakeqemu.Step{After: 20 * time.Millisecond, PowerOff: true})
	c, ex := fakeLab(t, script)
	c.OutDir = filepath.Join(c.RunDir, "lab", "stock", "run")
	file := filepath.Join(c.OutDir, TurnFile)
	if err := os.MkdirAll(c.OutDir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file, nil, 0o644) // an earlier lab's
	h := &holdTurns{t: t, ex: ex, file: file, hold: make(chan struct{})}
	c.Turns = h
	c.Timeouts = Timeouts{Run: time.Second, Silence: 200 * time.Millisecond}
	// The grant comes after the run's deadline and silence limit would
	// have failed a running lab: the pause counts as neither.
	time.AfterFunc(1500*time.Millisecond, func() { close(h.hold) })
	res, err := Run(t.Context(), c)
	if err != nil {
		t.Fatalf("lab paused for its turn failed: %v", err)
	}
	if !slices.Equal(h.readies, []string{"stock"}) || res.PausedSeconds < 1 {
		t.Errorf("ready %v, paused %.1f s; want one ready, a pause of over 1 s", h.readies, res.PausedSeconds)
	}
	q := ex.Procs()[0].QMP()
	stop, cont := slices.Index(q, "stop"), slices.Index(q, "cont")
	if stop < 0 || cont < stop || slices.Contains(q[cont+1:], "stop") {
		t.Errorf("QMP commands %v: want one stop, then cont", q)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("turn file left after the lab: %v", err)
	}
	console, _ := os.ReadFile(res.Console)
	if !strings.Contains(string(console), "measuring") {
		t.Errorf("the lab did not go on after its turn:\n%s", console)
	}
}

// Without Turns (a lab alone) the event changes nothing: no pause.
func TestLabTurnEventAlone(t *testing.T) {
	script := append(append([]fakeqemu.Step{}, labUp...),
		fakeqemu.Step{After: 20 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvTurn})},
		fakeqemu.Step{After: 20 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvExit})},
		fakeqemu.Step{After: 20 * time.Millisecond, PowerOff: true})
	c, ex := fakeLab(t, script)
	if _, err := Run(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if q := ex.Procs()[0].QMP(); slices.Contains(q, "stop") || slices.Contains(q, "cont") {
		t.Errorf("QMP commands %v: a lab alone is never paused", q)
	}
}

// The run inside announces its turn on the console and returns once the
// host created the turn file; an interrupted wait is an error.
func TestAwaitTurn(t *testing.T) {
	file := filepath.Join(t.TempDir(), TurnFile)
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- AwaitTurn(t.Context(), w, file) }()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if ev, ok := vmimages.ParseConsoleEvent(sc.Text()); ok {
			if ev.Ev != vmimages.EvTurn {
				t.Fatalf("event %+v, want %s", ev, vmimages.EvTurn)
			}
			break
		}
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("AwaitTurn after the turn file: %v", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := AwaitTurn(ctx, io.Discard, filepath.Join(t.TempDir(), TurnFile)); !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted wait: %v", err)
	}
}
