package kbuild

// Build errors and the progress of make, read from its output.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/units"
)

// BuildError is a failed make: the last compiler errors and the log.
type BuildError struct {
	Label  string
	Log    string
	Errors []string
	Err    error
}

func (e *BuildError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernel %s: build failed (%v); full log %s", e.Label, shortErr(e.Err), e.Log)
	if len(e.Errors) > 0 {
		b.WriteString("; last errors:\n")
		for _, l := range e.Errors {
			b.WriteString("  " + l + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func (e *BuildError) Unwrap() error { return e.Err }

// Is makes a failed build bad input (exit 2): the tree, the patches or the
// config do not build.
func (e *BuildError) Is(target error) bool { return target == fault.ErrInput }

func shortErr(err error) string {
	var ee *proc.ExitError
	if errors.As(err, &ee) && ee.ExitCode >= 0 {
		return fmt.Sprintf("make exited with status %d", ee.ExitCode)
	}
	return err.Error()
}

// errorLines picks the last compiler or linker errors of a build log, each
// with the source lines gcc shows after it, at most 15 lines; without any,
// the log's last 10 lines.
func errorLines(log string) []string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	var starts []int
	for i, l := range lines {
		if strings.Contains(l, ": error: ") || strings.Contains(l, ": fatal error: ") ||
			strings.Contains(l, "undefined reference to") || strings.Contains(l, ": Error: ") {
			starts = append(starts, i)
		}
	}
	var out []string
	if len(starts) == 0 {
		from := max(0, len(lines)-10)
		return lines[from:]
	}
	if len(starts) > 3 {
		starts = starts[len(starts)-3:]
	}
	for _, s := range starts {
		out = append(out, lines[s])
		kept := 0
		for j := s + 1; j < len(lines) && kept < 3; j++ {
			l := lines[j]
			if quietCmd(l) {
				continue // another job's "  CC  x.o" of a parallel make, between gcc's lines
			}
			if strings.Contains(l, ": error: ") || strings.HasPrefix(l, "make") {
				break
			}
			out = append(out, l)
			kept++
		}
	}
	if len(out) > 15 {
		out = out[len(out)-15:]
	}
	return out
}

// quietCmd reports a kbuild progress line ("  CC [M]  drivers/net/tun.o",
// "  LD      vmlinux"): two spaces, an upper-case command, spaces, a path.
func quietCmd(l string) bool {
	rest, ok := strings.CutPrefix(l, "  ")
	if !ok || rest == "" || rest[0] < 'A' || rest[0] > 'Z' {
		return false
	}
	cmd, _, ok := strings.Cut(rest, " ")
	return ok && strings.ToUpper(cmd) == cmd
}

// counter passes make's output to the log and counts compiled files,
// logging progress with an ETA every so often.
type counter struct {
	w      io.Writer
	part   []byte
	n      int
	expect int
	start  time.Time
	last   time.Time
	every  time.Duration
	log    io.Writer
	label  string
}

func (c *counter) Write(p []byte) (int, error) {
	c.part = append(c.part, p...)
	for {
		i := bytes.IndexByte(c.part, '\n')
		if i < 0 {
			break
		}
		line := c.part[:i]
		if bytes.HasPrefix(line, []byte("  CC ")) || bytes.HasPrefix(line, []byte("  CC\t")) {
			c.n++
		}
		c.part = c.part[i+1:]
	}
	if c.log != nil && time.Since(c.last) >= c.every && time.Since(c.start) >= c.every {
		c.last = time.Now()
		fmt.Fprintf(c.log, "kernel %s: building: %s\n", c.label, progressLine(c.n, c.expect, time.Since(c.start)))
	}
	return c.w.Write(p)
}

// progressLine is "812/1650 files, 4m10s, eta 4m20s" (or without the
// total and ETA when the amount of work is unknown).
func progressLine(n, expect int, elapsed time.Duration) string {
	el := elapsed.Round(time.Second)
	if expect <= 0 {
		return fmt.Sprintf("%s compiled, %s", units.Plural(n, "file"), el)
	}
	if n >= expect {
		return fmt.Sprintf("%s compiled (expected %d), %s, eta soon", units.Plural(n, "file"), expect, el)
	}
	eta := "eta unknown"
	if n > 0 {
		left := time.Duration(float64(elapsed) / float64(n) * float64(expect-n))
		eta = "eta " + left.Round(time.Second).String()
	}
	return fmt.Sprintf("%d/%d files, %s, %s", n, expect, el, eta)
}
