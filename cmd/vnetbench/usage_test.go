package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/report"
)

// docs/running.md's table of commands and each command's usage line (its
// -h) name the same flags: run -h left out --boot-guests, which the table
// shows; the table left out plan's --cpus, compare's --metric and image
// build's --modules, which their usage lines show. A usage line that
// ends in "[flags]" lists none: the table's must then be defined.
func TestRunningTableMatchesUsage(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "running.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `vnetbench ([a-z-]+(?: build)?)([^`]*)`")
	flagRe := regexp.MustCompile(`(?:^|[\s\[|])--?([a-z][a-z-]*)`)
	flags := func(s string) []string {
		var out []string
		for _, m := range flagRe.FindAllStringSubmatch(s, -1) {
			if !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
		slices.Sort(out)
		return out
	}
	rows := row.FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 10 {
		t.Fatalf("found %d commands in docs/running.md's table; the parser is broken", len(rows))
	}
	for _, r := range rows {
		cmd, synopsis := r[1], strings.ReplaceAll(r[2], `\|`, "|")
		var out, errb bytes.Buffer
		if err := run(t.Context(), append(strings.Fields(cmd), "-h"), &out, &errb); err != nil && !errors.Is(err, errHelp) {
			t.Errorf("%s -h: %v", cmd, err)
			continue
		}
		usage, _, _ := strings.Cut(out.String()+errb.String(), "\n")
		_, usyn, ok := strings.Cut(usage, "usage: vnetbench "+cmd)
		if !ok {
			t.Errorf("%s -h: usage line %q", cmd, usage)
			continue
		}
		doc, use := flags(synopsis), flags(usyn)
		if strings.Contains(usyn, "[flags]") {
			for _, f := range doc {
				if !strings.Contains(out.String()+errb.String(), "\n  -"+f) {
					t.Errorf("docs/running.md: vnetbench %s --%s: no such flag", cmd, f)
				}
			}
			continue
		}
		if !slices.Equal(doc, use) {
			t.Errorf("vnetbench %s: docs/running.md's table names flags %v, its usage line %v", cmd, doc, use)
		}
	}
}

// The subcommand list lines up every summary, bisect-step's too (its
// name ran into its summary), and version, as list, takes no argument
// (version x printed the version, exit 0).
func TestSubcommandListAndVersionArgs(t *testing.T) {
	var b bytes.Buffer
	usage(&b)
	col := -1
	for _, l := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(l, "  ") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSpace(l), " ")
		i := strings.Index(l[2+len(name):], strings.TrimSpace(l[2+len(name):])) + 2 + len(name)
		if col == -1 {
			col = i
		}
		if i != col || i <= 2+len(name) {
			t.Errorf("summary of %s starts at column %d, want %d: %q", name, i, col, l)
		}
	}
	err := run(t.Context(), []string{"version", "x"}, io.Discard, io.Discard)
	if exitCode(err) != exitBadInput || !strings.Contains(fmt.Sprint(err), `version takes no arguments (got "x")`) {
		t.Errorf("version x: exit %d (%v), want 2", exitCode(err), err)
	}
}

// compare -h named the formats text|markdown|json|csv|html|junit, but
// compare takes mail too: every format it takes is in its help.
func TestCompareHelpNamesItsFormats(t *testing.T) {
	var errb bytes.Buffer
	run(t.Context(), []string{"compare", "-h"}, io.Discard, &errb)
	for _, f := range report.Formats {
		err := run(t.Context(), []string{"compare", runs + "stock", runs + "patched", "--format", f}, io.Discard, io.Discard)
		if exitCode(err) == exitBadInput {
			continue // refused: benchfmt, kcidb, lava
		}
		if !strings.Contains(errb.String(), "|"+f+"|") && !strings.Contains(errb.String(), " "+f+"|") && !strings.Contains(errb.String(), "|"+f+" ") {
			t.Errorf("compare takes --format %s, but its help does not name it:\n%s", f, errb.String())
		}
	}
}
