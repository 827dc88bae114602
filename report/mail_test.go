package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/results"
)

// A mail of a real lab run (the lab pktgen e2e, stock vs patched, TCG in
// TCG): every line ASCII and within 72 columns, in a mail's order (what
// was compared, kernels, environment, tables, caveats, the command).
func TestMailRealLabRun(t *testing.T) {
	out := realMail(t, "lab-pktgen-tcg")
	for i, l := range strings.Split(out, "\n") {
		for _, c := range l {
			if c > 0x7e {
				t.Errorf("line %d is not ASCII: %q", i+1, l)
				break
			}
		}
	}
	last := -1
	for _, part := range []string{"vnetbench lab-pktgen-e2e: stock vs patched.", "\nKernels:\n", "\nEnvironment:\n", "| Lost ", "\nCaveats:\n", "\nTo reproduce:\n", "vnetbench run lab-pktgen-e2e --seed"} {
		i := strings.Index(out, part)
		if i < last {
			t.Errorf("%q is at %d, before the previous part (%d) or missing", part, i, last)
		}
		last = i
	}
	checkGolden(t, "lab-pktgen-tcg.mail", []byte(out))
}

// A mail of a real per-patch lab run (lab-pktgen --per-patch on the split
// tun backpressure series, drop_reasons, perf record with call graphs;
// every column of its 4-thread TAP cell): the profile deltas of kpktgend
// name kernel symbols as long as native_queued_spin_lock_slowpath, which
// beside two sides' "21.80 ±32%" made lines of 73 and 76 columns. Every
// line stays within 72; the per-patch tables say what they count (totals
// of all threads, per second of pktgen's run time; before, they carried
// no definition, then each carried Tx's, Lost's and the per-thread rows'), p1-3 takes Lost to 0, Lost by reason and both profile
// tables are there, and a cut symbol says so.
func TestMailRealPerPatchRun(t *testing.T) {
	out := realMail(t, "lab-perpatch-tcg")
	for _, part := range []string{"| Lost total, pktgen to VM", "|     0 pps | ? -100.00% | ? -100.00% |", "Tx total = all threads' packets, per second of pktgen's own run time",
		"Lost total = packets dropped (the tap's tx_dropped", "| Lost by reason FULL_RING", "REASON = the kernel's own count", "Profile deltas (perf record", "perf-profile.self,", "perf-profile.children,", "| pktgen_thread_worker", "are cut (..) to keep the mail"} {
		if !strings.Contains(out, part) {
			t.Errorf("the mail lacks %q", part)
		}
	}
	checkGolden(t, "lab-perpatch-tcg.mail", []byte(out))
}

// realMail is the mail of the real capture dir, failing t on any line
// wider than MaxWidth.
func realMail(t *testing.T, dir string) string {
	t.Helper()
	set, err := results.Load(run(dir)...)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Render(&buf, set, r, "mail", ASCII); err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(buf.String(), "\n") {
		if len(l) > MaxWidth {
			t.Errorf("%s: mail line %d is %d columns: %q", dir, i+1, len(l), l)
		}
	}
	return buf.String()
}

// A mail of two runs (compare BASE NEW, or report of a stock and a
// patched boot's runs) gives each run's command under its column: it gave
// the first's alone, as if one command had made both columns. Columns of
// one run (a lab run's kernels) share its one command, said once.
func TestMailReproducesEachRun(t *testing.T) {
	mail := func(stock, patched []string) string {
		set := runnerSamples(t, "backend: tap\ngenerator: {pktgen: {count: 5000}}\n", 1)
		set.Env["stock"].Command, set.Env["patched"].Command = stock, patched
		_, tail, _ := strings.Cut(mailOf(t, set, Options{}), "\nTo reproduce:\n\n")
		return tail
	}
	stock := []string{"vnetbench", "run", "s.yaml", "--label", "stock"}
	patched := []string{"vnetbench", "run", "s.yaml", "--label", "patched"}
	want := "  # stock\n  vnetbench run s.yaml --label stock\n  # patched\n  vnetbench run s.yaml --label patched\n"
	if got := mail(stock, patched); got != want {
		t.Errorf("two runs: To reproduce\n%s\nwant\n%s", got, want)
	}
	if got, want := mail(stock, stock), "  vnetbench run s.yaml --label stock\n"; got != want {
		t.Errorf("one run: To reproduce\n%s\nwant\n%s", got, want)
	}
}

// --by backend of a real lab run (stock and patched): a column holds
// both kernels' samples, and the header named each column after the
// last kernel's build ("tap: ... + 1 patch", as if stock had never run).
// The kernels' lines name the kernels, stock's without the patch.
func TestMailByAxisNamesKernels(t *testing.T) {
	set, err := results.Load(run("lab-pktgen-3run-tcg")...)
	if err != nil {
		t.Fatal(err)
	}
	_, kernels, _ := strings.Cut(mailOf(t, set, Options{By: "backend"}), "\nKernels:\n")
	kernels, _, _ = strings.Cut(kernels, "\n\n")
	stock, patched, ok := strings.Cut(kernels, "\n  patched: ")
	if !strings.HasPrefix(stock, "  stock: ") || !ok || strings.Contains(stock, "patch") || !strings.Contains(patched, "+ 1 patch") {
		t.Errorf("Kernels: section\n%s\nwant stock's line (no patch), then patched's (+ 1 patch)", kernels)
	}
}

// mailOf is the mail of set's report with opt.
func mailOf(t *testing.T, set *results.Set, opt Options) string {
	t.Helper()
	r, err := Build(set, opt)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteMail(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// The comment naming a command's columns keeps within the mail's width:
// columns of long labels wrap onto more comment lines, each a comment so
// the block still pastes.
func TestMailReproduceCommentWraps(t *testing.T) {
	long := []string{"linux-6.1-stock-debian-config (nested)", "linux-6.1-tun-backpressure-v3 (nested)", "linux-6.1-tun-backpressure-v4 (nested)"}
	r := &Report{Columns: append(append([]string(nil), long...), "other"), Env: map[string]*Env{}}
	for _, c := range long {
		r.Env[c] = &Env{Command: []string{"vnetbench", "run", "lab.yaml"}}
	}
	r.Env["other"] = &Env{Command: []string{"vnetbench", "run", "other.yaml"}}
	var b strings.Builder
	writeReproduce(&b, r)
	var comments []string
	for _, l := range strings.Split(b.String(), "\n") {
		if len(l) > MaxWidth {
			t.Errorf("line of %d columns: %q", len(l), l)
		}
		if c, ok := strings.CutPrefix(l, "  # "); ok {
			comments = append(comments, c)
		}
	}
	if got, want := strings.Join(comments[:len(comments)-1], " "), strings.Join(long, ", "); got != want || len(comments) < 3 {
		t.Errorf("comments %q: want %q over more than one line, then \"other\"", comments, want)
	}
}
