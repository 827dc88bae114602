package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// rebuildFile replaces the index at path, which SQLite cannot read, by a
// new one of the run directories paths: built in a temporary file beside
// path and renamed over it. It removes only what this process made: the
// temporary file when building it fails, and the old index's journals
// that were not there before Rebuild opened it (before). Journals still
// there that were there before (a crashed writer's, which SQLite's open
// kept) are refused: SQLite would apply them to the new index, and they
// are not vnetbench's to delete.
func rebuildFile(ctx context.Context, path string, paths, before []string) (int, error) {
	left := journals(path)
	if old := slices.DeleteFunc(slices.Clone(left), func(j string) bool { return !slices.Contains(before, j) }); len(old) > 0 {
		return 0, fault.Input("history rebuild: %s cannot be read and %s lie beside it, which SQLite would apply to a new index; vnetbench removes only files it made: remove them (they belong to the unreadable index) and run again", path, strings.Join(old, ", "))
	}
	runs, err := ReadRuns(paths)
	if err != nil {
		return 0, err
	}
	tmp, err := buildTemp(ctx, path, runs)
	if err != nil {
		return 0, err
	}
	for _, j := range left {
		os.Remove(j) // made by this process's open: not there before it
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("replace history index %s: %w", path, err)
	}
	return len(runs), nil
}

// journals returns those of SQLite's journals of the index at path that
// exist.
func journals(path string) []string {
	var out []string
	for _, j := range journalNames(path) {
		if _, err := os.Lstat(j); err == nil {
			out = append(out, j)
		}
	}
	return out
}

// buildTemp writes runs to a new index in a file that os.CreateTemp makes
// beside path (PATH.rebuild-RANDOM, a name no one else has), with the
// mode of the index it replaces (CreateTemp's is 0600), and returns its
// name. When that fails it removes that file, and nothing else. Closing
// the index removes the journals SQLite made beside it.
func buildTemp(ctx context.Context, path string, runs []*Run) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".rebuild-*")
	if err != nil {
		return "", fmt.Errorf("history rebuild: %w", err)
	}
	tmp := f.Name()
	if fi, err := os.Stat(path); err == nil {
		f.Chmod(fi.Mode().Perm()) // its owner's own file; else 0600 stays
	}
	f.Close()
	if err := writeIndex(ctx, tmp, runs); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// writeIndex records runs in the index at tmp.
func writeIndex(ctx context.Context, tmp string, runs []*Run) error {
	x, err := Open(tmp)
	if err != nil {
		return err
	}
	err = x.Add(ctx, runs...)
	if cerr := x.Close(); err == nil {
		err = cerr
	}
	return err
}
