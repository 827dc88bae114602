package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
)

// reproducer collects reproduce.sh: every command of a run, in order.
// It is safe for concurrent use (a window's tools start in parallel).
type reproducer struct {
	mu    sync.Mutex
	lines []string
}

// argv remembers a command.
func (p *reproducer) argv(argv []string) {
	p.mu.Lock()
	p.lines = append(p.lines, proc.Quote(argv))
	p.mu.Unlock()
}

// cmd remembers a command as it runs (in its namespace: ip netns exec).
func (p *reproducer) cmd(c proc.Cmd) { p.argv(c.FullArgv()) }

// note adds a line: a command quoted for a shell (proc.Quote) or a
// comment, kept on its line (safeComment).
func (p *reproducer) note(line string) {
	p.mu.Lock()
	p.lines = append(p.lines, safeComment(line))
	p.mu.Unlock()
}

// safeComment returns a comment line ("#...") with its line breaks and
// other control characters escaped as \n, \r or \xNN, so text in it (a
// scenario's names, a directory name) cannot end the comment and become
// a command of reproduce.sh; any other line is returned unchanged.
func safeComment(line string) string {
	if !strings.HasPrefix(line, "#") {
		return line
	}
	var b strings.Builder
	for _, c := range []byte(line) {
		switch {
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 && c != '\t' || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// write writes reproduce.sh into dir for run id of o: every command of
// the run, quoted, netlink operations as their iproute2 equivalents; a
// resumed run's after the commands already there. It writes a new file
// renamed into place (nothing planted at the name is followed).
func (p *reproducer) write(dir, id string, o *Options) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.lines) == 0 {
		return nil
	}
	script := reproduceScript(id, o.Scenario, o.Seed, o.Sets, p.lines)
	if o.Resume {
		old, err := results.ReadFileNoFollow(filepath.Join(dir, results.ReproduceFile))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		script = string(old) + script
	}
	return results.WriteFileAtomic(dir, results.ReproduceFile, []byte(script), 0o755)
}

// reproduceScript is reproduce.sh: a header naming the run, then lines
// (commands quoted with proc.Quote, comments made safe by note).
func reproduceScript(id, scenario string, seed int64, sets, lines []string) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	b.WriteString(safeComment(fmt.Sprintf("# Commands vnetbench ran for run %s (scenario %s, seed %d), in order.", id, scenario, seed)) + "\n")
	if len(sets) > 0 {
		b.WriteString(safeComment("# Scenario overrides: "+setArgs(sets)) + "\n")
	}
	b.WriteString("# Netlink operations (netns, tap, qdisc) appear as their iproute2 equivalents;\n")
	b.WriteString("# long-running tools were stopped with SIGINT at the end of each window.\n")
	b.WriteString("set -e\n")
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// setArgs is the overrides as shell-quoted --set arguments (a value has
// no newline: scenarios.ParseSet refuses control characters).
func setArgs(sets []string) string {
	var argv []string
	for _, s := range sets {
		argv = append(argv, "--set", s)
	}
	return proc.Quote(argv)
}

// recordingExec records every command before running it.
type recordingExec struct {
	inner proc.Executor
	rec   func([]string)
}

func (e *recordingExec) Run(ctx context.Context, c proc.Cmd) ([]byte, error) {
	e.rec(c.FullArgv())
	return e.inner.Run(ctx, c)
}

func (e *recordingExec) Start(ctx context.Context, c proc.Cmd) (proc.Process, error) {
	e.rec(c.FullArgv())
	return e.inner.Start(ctx, c)
}
