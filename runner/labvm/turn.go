package labvm

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/vmimages"
)

// Labs side by side, measuring in turn. The labs of one run boot at once
// where the host's CPUs hold all their vCPUs (runner/lab decides), but a
// lab measures only when no other lab works: the run inside
// prints a "turn" event (vmimages.EvTurn) right before its first
// measurement and waits for a file; the host pauses that lab (QMP stop:
// its vCPUs and its virtual clock stand still) and, on its turn, creates
// the file and lets the lab go on (QMP cont). The lab keeps the turn
// until it powers off.
//
// The answer is a file because a lab has no host-to-lab channel but its
// read-write run directory share (OutDir): 9p without the page cache, so
// a file the host creates there is seen at the next stat inside. A new
// virtio-serial port would change the lab's QEMU command line and need a
// reader in the run inside for one bit, once.

// TurnEnv is the environment variable that tells the run inside a lab to
// wait for its turn before its first measurement: the path of the file
// (TurnFile in its run directory share) whose existence is the turn.
// Unset: the run measures at once (a lab alone).
const TurnEnv = "VNETBENCH_LAB_TURN"

// TurnFile is the turn file's name in the lab's read-write share; the
// host removes it before the lab boots and after it ends.
const TurnFile = "turn"

// Turns decides when the labs of a run measure. Ready is called when the
// lab of label has announced it is ready to measure and has been paused;
// the channel it returns is closed on the lab's turn.
type Turns interface {
	Ready(label string) <-chan struct{}
}

// turnPoll is how often the run inside looks for the turn file: a 9p
// stat, a few milliseconds under TCG in TCG.
const turnPoll = 100 * time.Millisecond

// AwaitTurn is the run inside a lab waiting for its turn (TurnEnv): it
// prints the "turn" event on w (the lab's console) and returns once the
// file path exists or ctx ends. The host pauses the lab meanwhile, so
// the wait costs the lab neither CPU nor time on its clock.
func AwaitTurn(ctx context.Context, w io.Writer, path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil // a turn granted already (not expected: the host removes the file)
	}
	b, _ := vmimages.EncodeConsoleEvent(vmimages.Event{Ev: vmimages.EvTurn, Uptime: uptime()})
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("announce ready to measure: %w", err)
	}
	t := time.NewTicker(turnPoll)
	defer t.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the lab's turn to measure: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// turnDir is the directory of the lab's turn file: its read-write share.
func (c *Config) turnDir(runDir string) string {
	if c.OutDir != "" {
		return c.OutDir
	}
	return filepath.Join(runDir, results.LabVMDir(c.Label))
}

// removeTurn removes the lab's turn file (nothing to do without Turns),
// a name vnetbench writes in the lab's part of the run directory; a
// link there is removed, not followed, and one on the way refused
// (safefs.RemoveOwn).
func (c *Config) removeTurn(runDir string) error {
	if c.Turns == nil {
		return nil
	}
	d, err := safefs.Open(c.turnDir(runDir))
	if err != nil {
		return err
	}
	defer d.Close()
	return safefs.RemoveOwn(d, TurnFile)
}

// pause handles the run inside announcing it is ready to measure: the
// lab is stopped (QMP stop) and waits for Turns to grant its turn. A
// lab without Turns, or one that had its turn, goes on.
func (l *labVM) pause() error {
	if l.c.Turns == nil || l.grant != nil || l.granted {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.vm.QMP().Execute(ctx, "stop", nil, nil); err != nil {
		return l.fail(fmt.Errorf("pause the lab until its turn to measure: %w", err))
	}
	l.pausedAt = time.Now()
	l.logf("ready to measure; paused until its turn")
	l.grant = l.c.Turns.Ready(l.c.Label)
	return nil
}

// resume gives the paused lab its turn: the turn file, then QMP cont.
// The phase's deadline and the silence check do not count the pause.
func (l *labVM) resume() error {
	paused := time.Since(l.pausedAt)
	l.grant, l.granted = nil, true
	select {
	case <-l.vm.Done():
		return nil // gone while paused: the wait loop says how (poweredOff)
	default:
	}
	d, err := safefs.Open(l.turnDir)
	if err == nil {
		err = d.WriteFile(TurnFile, nil, 0o644)
		d.Close()
	}
	if err != nil {
		return l.fail(fmt.Errorf("give the lab its turn: %w", err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.vm.QMP().Execute(ctx, "cont", nil, nil); err != nil {
		return l.fail(fmt.Errorf("resume the lab for its turn: %w", err))
	}
	l.deadline = l.deadline.Add(paused)
	l.f.seen = time.Now()
	l.res.PausedSeconds += paused.Seconds()
	l.logf("its turn to measure (paused %s)", paused.Round(time.Second))
	return nil
}

func (l *labVM) logf(format string, a ...any) {
	if l.c.Output != nil {
		fmt.Fprintf(l.c.Output, "[lab %s] "+format+"\n", append([]any{l.c.Label}, a...)...)
	}
}
