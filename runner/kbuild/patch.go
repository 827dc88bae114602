package kbuild

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/safefs"
)

// Patch is one patch to apply: a patch file, or one mail of an mbox.
type Patch struct {
	// File is the file it came from; Part numbers the mails of an mbox
	// (1-based; 0 for a file that holds one patch).
	File string
	Part int
	// Subject is the mail's subject without its [PATCH ...] tag ("" when
	// the file has no Subject: header).
	Subject string
	// Data is the patch text as git apply reads it.
	Data []byte
	// SHA256 is the hex SHA-256 of Data.
	SHA256 string
}

// Name is the patch for messages: "FILE" or "FILE, mail 2".
func (p Patch) Name() string {
	if p.Part == 0 {
		return p.File
	}
	return fmt.Sprintf("%s, mail %d", p.File, p.Part)
}

// ReadPatches expands patterns (paths or globs, in order; a glob's matches
// sorted by name) and reads every patch in them. An mbox holding several
// git format-patch mails gives one Patch per mail; mails without a diff
// (a cover letter) are skipped. A pattern that matches nothing, a file
// that cannot be read or one without any diff is an input error.
func ReadPatches(patterns []string) ([]Patch, error) {
	var out []Patch
	for _, pat := range patterns {
		files, err := expand(pat)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := safefs.ReadFile(f, safefs.MaxSmall)
			if err != nil {
				return nil, fault.Input("patch %s: %w; fix the patches: list", f, err)
			}
			ps, err := ParsePatches(f, data)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
		}
	}
	return out, nil
}

// ParsePatches reads the patches of one file's content (a patch, or an
// mbox of git format-patch mails; a mail without a diff is skipped).
func ParsePatches(file string, data []byte) ([]Patch, error) {
	var out []Patch
	ps := SplitMbox(data)
	for i, part := range ps {
		if !hasDiff(part) {
			continue
		}
		p := Patch{File: file, Subject: subject(part), Data: part, SHA256: sha(part)}
		if len(ps) > 1 {
			p.Part = i + 1
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fault.Input("patch %s holds no diff; give patch files (git format-patch) or an mbox", file)
	}
	return out, nil
}

// expand resolves one patches: entry to files.
func expand(pat string) ([]string, error) {
	if !strings.ContainsAny(pat, "*?[") {
		fi, err := os.Stat(pat)
		switch {
		case err != nil:
			return nil, fault.Input("patch %s: no such file; fix the patches: list", pat)
		case fi.IsDir():
			return nil, fault.Input("patch %s is a directory; name the files, e.g. %s", pat, filepath.Join(pat, "*.patch"))
		}
		return []string{pat}, nil
	}
	m, err := filepath.Glob(pat)
	if err != nil {
		return nil, fault.Input("patch pattern %q: %v", pat, err)
	}
	var files []string
	for _, f := range m {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil, fault.Input("patch pattern %s matches no file; fix the patches: list", pat)
	}
	sort.Strings(files)
	return files, nil
}

// mboxFrom is the separator line git format-patch writes before each mail.
var mboxFrom = lazyre.New(`(?m)^From [0-9a-f]{40} Mon Sep 17 00:00:00 2001$`)

// SplitMbox splits an mbox of git format-patch mails into its mails. Text
// without such separators (or with one) is one part.
func SplitMbox(data []byte) [][]byte {
	locs := mboxFrom().FindAllIndex(data, -1)
	if len(locs) < 2 {
		return [][]byte{data}
	}
	var parts [][]byte
	if pre := bytes.TrimSpace(data[:locs[0][0]]); len(pre) > 0 {
		parts = append(parts, data[:locs[0][0]])
	}
	for i, l := range locs {
		end := len(data)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		parts = append(parts, data[l[0]:end])
	}
	return parts
}

func hasDiff(p []byte) bool {
	return bytes.Contains(p, []byte("\ndiff --git ")) || bytes.HasPrefix(p, []byte("diff --git ")) ||
		(bytes.Contains(p, []byte("\n--- ")) && bytes.Contains(p, []byte("\n+++ ")))
}

var tagRe = lazyre.New(`^\s*(\[[^\]]*\]\s*)+`)

// Subject is a patch mail's subject without its [PATCH ...] tag ("" when
// it has no Subject: header).
func Subject(p []byte) string { return subject(p) }

// subject returns a mail's Subject: header (folded lines joined) without
// its leading [PATCH ...] tags.
func subject(p []byte) string {
	lines := strings.Split(string(p), "\n")
	for i, l := range lines {
		if l == "" {
			break // end of the headers
		}
		rest, ok := strings.CutPrefix(l, "Subject:")
		if !ok {
			continue
		}
		s := strings.TrimSpace(rest)
		for _, c := range lines[i+1:] {
			if c == "" || (c[0] != ' ' && c[0] != '\t') {
				break
			}
			s += " " + strings.TrimSpace(c)
		}
		return strings.TrimSpace(tagRe().ReplaceAllString(s, ""))
	}
	return ""
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Hunk finds the hunk of patch that starts at line in the original of
// file (as git apply names it: "patch failed: FILE:LINE") and returns its
// header, e.g. "@@ -1133,13 +1234,30 @@ static netdev_tx_t tun_net_xmit(...)".
func Hunk(patch []byte, file string, line int) string {
	inFile := false
	for _, l := range strings.Split(string(patch), "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			inFile = false
		case strings.HasPrefix(l, "--- "):
			name := strings.TrimSpace(strings.TrimPrefix(l, "--- "))
			name, _, _ = strings.Cut(name, "\t")
			inFile = strings.TrimPrefix(name, "a/") == file
		case strings.HasPrefix(l, "+++ ") && !inFile:
			name := strings.TrimSpace(strings.TrimPrefix(l, "+++ "))
			name, _, _ = strings.Cut(name, "\t")
			inFile = strings.TrimPrefix(name, "b/") == file
		case inFile && strings.HasPrefix(l, "@@ -"):
			old := strings.TrimPrefix(l, "@@ -")
			old, _, _ = strings.Cut(old, " ")
			start, _, _ := strings.Cut(old, ",")
			if n, err := strconv.Atoi(start); err == nil && n == line {
				return strings.TrimRight(l, "\r")
			}
		}
	}
	return ""
}

// Files lists the files a patch changes (the "+++ b/..." names, and the
// "--- a/..." name of a deleted file), in order, each once.
func Files(patch []byte) []string {
	var out []string
	seen := map[string]bool{}
	var minus string
	for _, l := range strings.Split(string(patch), "\n") {
		switch {
		case strings.HasPrefix(l, "--- "):
			minus = strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(l, "--- ")), "a/")
		case strings.HasPrefix(l, "+++ "):
			name := strings.TrimSpace(strings.TrimPrefix(l, "+++ "))
			name, _, _ = strings.Cut(name, "\t")
			if name == "/dev/null" {
				name = minus
			}
			name = strings.TrimPrefix(name, "b/")
			if name != "" && !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	return out
}
