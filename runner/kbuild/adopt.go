package kbuild

// A linux-source tree an older vnetbench fetched has no recorded package
// version. Rather than fall back to whole-kernel builds on every such
// machine, the module build takes apt's candidate version of the package
// when the tree is that upstream release and every file Debian's common
// headers of that version hold (include/, the Makefiles and Kconfig files:
// ~9,400 for 6.1) is byte for byte the tree's; the version is then
// recorded beside the tree.

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/proc"
)

// candidateVersion is the version apt would fetch of linux-source-SERIES
// ("" when none).
func candidateVersion(ctx context.Context, ex proc.Executor, series string) (string, error) {
	out, err := ex.Run(ctx, proc.Cmd{Argv: []string{"apt-cache", "policy", "linux-source-" + series}})
	if err != nil {
		return "", fmt.Errorf("apt-cache policy linux-source-%s: %w", series, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(l), "Candidate:"); ok {
			if c = strings.TrimSpace(c); c != "(none)" {
				return c, nil
			}
		}
	}
	return "", nil
}

var makeVarRe = lazyre.New(`(?m)^(VERSION|PATCHLEVEL|SUBLEVEL) = ([0-9]+)$`)

// treeRelease is a tree's upstream release from its top Makefile
// ("6.1.192"; "" when unreadable).
func treeRelease(tree string) string {
	v := map[string]string{}
	for _, m := range makeVarRe().FindAllStringSubmatch(readString(filepath.Join(tree, "Makefile")), 3) {
		v[m[1]] = m[2]
	}
	if len(v) != 3 {
		return ""
	}
	return v["VERSION"] + "." + v["PATCHLEVEL"] + "." + v["SUBLEVEL"]
}

// upstreamOf is a Debian package version's upstream part ("6.1.192" of
// "6.1.192-3").
func upstreamOf(version string) string {
	u, _, _ := strings.Cut(version, "-")
	return u
}

// sameAsCommonHeaders compares the regular files of h's common headers
// (ROOT/usr/src/linux-headers-ABI-common) with the tree's at the same
// paths. It returns how many it compared and the first that differs or
// is missing ("" = none).
func sameAsCommonHeaders(tree string, h *Headers) (int, string, error) {
	commons, _ := filepath.Glob(filepath.Join(h.Root, "usr", "src", "linux-headers-*-common"))
	if len(commons) != 1 {
		return 0, "", fmt.Errorf("%s: want one linux-headers-*-common directory, found %d", h.Root, len(commons))
	}
	n, differs := 0, ""
	err := filepath.WalkDir(commons[0], func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(commons[0], p)
		want, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		got, err := os.ReadFile(filepath.Join(tree, rel))
		n++
		if err != nil || !bytes.Equal(got, want) {
			differs = rel
			return filepath.SkipAll
		}
		return nil
	})
	return n, differs, err
}

// adoptVersion checks an unversioned tree against the headers of version
// (fetched as h) and records the version beside it; a reason for the full
// build when the tree is not of that version.
func adoptVersion(tree, version string, h *Headers) (string, error) {
	n, differs, err := sameAsCommonHeaders(tree, h)
	if err != nil {
		return "", err
	}
	if differs != "" {
		return fmt.Sprintf("%s has no recorded package version and its %s differs from linux-headers-%s %s's (remove the tree to fetch it again)", tree, differs, h.Release, version), nil
	}
	if n == 0 {
		return fmt.Sprintf("%s has no recorded package version and linux-headers-%s %s has no common headers to check it with", tree, h.Release, version), nil
	}
	f, err := os.CreateTemp(filepath.Dir(tree), ".version-")
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(version + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), tree+".version")
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return "", err
}
