package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An input that cannot be read is bad input, exit 2, in one line naming
// it: not exit 1, the code a failed command (and, once, a regression)
// had. Each way a path fails to read: a benchfmt file whose read fails
// (/proc/self/mem at offset 0: EIO), a run directory whose results.jsonl
// is a directory or a link (safefs follows none), a path under a file.
func TestUnreadableInputExit2(t *testing.T) {
	tmp := t.TempDir()
	isDir := filepath.Join(tmp, "isdir")
	os.MkdirAll(filepath.Join(isDir, "results.jsonl"), 0o755)
	link := filepath.Join(tmp, "link")
	os.MkdirAll(link, 0o755)
	os.Symlink(filepath.Join(runs+"stock", "results.jsonl"), filepath.Join(link, "results.jsonl"))
	notDir := filepath.Join(tmp, "file")
	os.WriteFile(notDir, []byte("x"), 0o644)
	good := runs + "stock"
	for _, bad := range []string{"/proc/self/mem", isDir, link, filepath.Join(notDir, "sub")} {
		for _, args := range [][]string{{"report", bad}, {"compare", good, bad}, {"compare", bad, good}} {
			var out, errb bytes.Buffer
			err := run(t.Context(), args, &out, &errb)
			if got := exitCode(err); got != exitBadInput {
				t.Errorf("%v: exit %d (%v), want 2", args, got, err)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, bad) || strings.Contains(msg, "\n") {
				t.Errorf("%v: %q, want one line naming %s", args, msg, bad)
			}
		}
	}
}
