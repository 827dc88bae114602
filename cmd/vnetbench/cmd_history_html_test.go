package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/testenv/xmltree"
)

// historyPage runs history with args writing HTML and parses the page.
func historyPage(t *testing.T, args ...string) *xmltree.Node {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.html")
	if _, stderr, err := runHistory(t, append(args, "-o", path)...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return xmltree.Parse(t, b)
}

// TestHistoryHTMLRuns parses the page of a history of the real
// quickstart run (40 runs, tx_pps and throughput 25% lower from run 30):
// results first and no diagnostics by default, a note saying how many
// were left out; the tx_pps chart's axis in Kpps, its change point a
// regression in its label's colour and in the table; --all adds the
// diagnostics after the results.
func TestHistoryHTMLRuns(t *testing.T) {
	dirs := fakeHistory(t, 40, 30, 0.75)
	page := historyPage(t, dirs...)
	h2s := page.All("h2")
	if len(h2s) == 0 || !strings.HasPrefix(h2s[0].Text, "tx_pps · ") {
		t.Fatalf("%d charts, the first not of tx_pps", len(h2s))
	}
	for _, h := range h2s {
		if m, _, _ := strings.Cut(h.Text, " · "); diagnosticMetric(m) {
			t.Errorf("default page charts the diagnostic %s", h.Text)
		}
	}
	if ems := page.All("em"); len(ems) != 1 || !regexp.MustCompile(`^\d+ diagnostic series .* not shown; --all shows them$`).MatchString(ems[0].Text) {
		t.Errorf("the page does not end saying diagnostics were left out: %+v", ems)
	}
	svgs, found := page.All("svg"), false
	for i, h := range h2s {
		if !strings.HasPrefix(h.Text, "tx_pps · tap/trafgen") {
			continue
		}
		found = true
		for _, tx := range svgs[i].All("text") {
			if tx.Attr("text-anchor") == "end" && tx.Attr("x") == "76" && !regexp.MustCompile(`^\d+(\.\d+)? Kpps$`).MatchString(tx.Text) {
				t.Errorf("%s: axis tick %q, want Kpps as the tables write it", h.Text, tx.Text)
			}
		}
		var labels []string
		for _, tx := range svgs[i].All("text") {
			if tx.Attr("class") == "cp" {
				labels = append(labels, tx.Attr("fill")+" "+strings.TrimSpace(tx.Text))
			}
		}
		if len(labels) != 1 || !regexp.MustCompile(`^#b00 c0{9}30 -2\d\.\d%$`).MatchString(labels[0]) {
			t.Errorf("%s: change-point labels %q, want one regression (#b00) at c...30, about -25%%", h.Text, labels)
		}
	}
	if !found {
		t.Errorf("no chart of tx_pps in tap/trafgen")
	}
	all := historyPage(t, append([]string{"--all"}, dirs...)...).All("h2")
	diag := 0
	for _, h := range all {
		m, _, _ := strings.Cut(h.Text, " · ")
		switch {
		case diagnosticMetric(m):
			diag++
		case diag > 0:
			t.Errorf("--all: result %s after a diagnostic", h.Text)
		}
	}
	if diag == 0 || len(all) != len(h2s)+diag {
		t.Errorf("--all charts %d series (%d diagnostics), default %d", len(all), diag, len(h2s))
	}
}

// TestHistoryHTMLGolden: the page of the real quickstart run's packet
// rate and throughput (one point each), pinned.
func TestHistoryHTMLGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.html")
	if _, stderr, err := runHistory(t, real+"quickstart-tcg", "--metric", "tx_pps,throughput_bps", "-o", path); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checkCLIGolden(t, filepath.Join("testdata", "history", "quickstart-tcg.html"), b)
}
