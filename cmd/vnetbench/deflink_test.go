package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/bisect"
)

// What vnetbench chose by default, a link planted there, is refused:
// runs/ (run without -o) and vnetbench under the cache home (run and
// bisect, which write the cache), one line, exit 2, nothing written
// through it. What the user gave ($VNETBENCH_CACHE, $XDG_CACHE_HOME, the
// working directory) is followed.
func TestDefaultPathLinks(t *testing.T) {
	wd, other, home := t.TempDir(), t.TempDir(), t.TempDir()
	t.Chdir(wd)
	t.Setenv("VNETBENCH_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", home)
	tree, commits := gitTree(t, 2)
	cl := testCLI()
	cl.judge = func(context.Context, *bisectOpts, string, io.Writer, io.Writer) (bisect.Outcome, error) {
		t.Error("bisect judged a commit")
		return bisect.Outcome{}, errors.New("not in this test")
	}
	dry := []string{"run", "quickstart", "--dry-run", "--seed", "1"}
	bisect := []string{"bisect", "quickstart", "--tree", tree, "--good", commits[0], "--bad", commits[2], "--metric", "tx_pps", "-o", filepath.Join(wd, "b")}
	for _, tc := range []struct {
		name, link string
		args       []string
		want       string // "" = not refused for a link
	}{
		{"runs", "runs", dry, "runs is a symbolic link (to " + other + "), on the way to " + wd + "/runs/quickstart-"},
		{"cache", filepath.Join(home, "vnetbench"), dry, home + "/vnetbench is a symbolic link (to " + other + "), a path which vnetbench chose by default; it writes nothing through a link it chose: set VNETBENCH_CACHE to the directory to use, or remove the link"},
		{"bisect cache", filepath.Join(home, "vnetbench"), bisect, home + "/vnetbench is a symbolic link"},
		{"XDG_CACHE_HOME", home, dry, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.link == home {
				t.Setenv("XDG_CACHE_HOME", filepath.Join(wd, "xdg"))
				tc.link = filepath.Join(wd, "xdg")
			}
			if err := os.Symlink(other, tc.link); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(tc.link)
			err := cl.run(t.Context(), tc.args, io.Discard, io.Discard)
			if tc.want == "" {
				if err != nil {
					t.Errorf("%v", err)
				}
				return
			}
			if exitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("exit %d, %v; want exit 2 and %q", exitCode(err), err, tc.want)
			}
			if ents, _ := os.ReadDir(other); len(ents) > 0 {
				t.Errorf("wrote %s through the link", ents[0].Name())
			}
		})
	}
}

// history's index: a link at the default vnetbench-history.db (or at a
// --db given) is refused by add and by rebuild, which SQLite would have
// followed, and nothing is written through it.
func TestHistoryIndexLink(t *testing.T) {
	wd, other := t.TempDir(), t.TempDir()
	t.Chdir(wd)
	a := filepath.Join(t.TempDir(), "a")
	writeShard(t, a, "run-a", 1, "tap/x")
	if err := os.Symlink(filepath.Join(other, "index.db"), defaultHistoryDB); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"history", "add", a}, {"history", "rebuild", a}} {
		err := run(t.Context(), args, io.Discard, io.Discard)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), defaultHistoryDB+" is a symbolic link") {
			t.Errorf("%s: exit %d, %v", strings.Join(args, " "), exitCode(err), err)
		}
		if ents, _ := os.ReadDir(other); len(ents) > 0 {
			t.Errorf("%s wrote %s through the link", strings.Join(args, " "), ents[0].Name())
		}
	}
}
