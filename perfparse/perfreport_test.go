package perfparse

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

func TestPerfReportFixture(t *testing.T) {
	rep, err := ParsePerfReport(openT(t, "testdata/perf-report/fixture-stdio.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Sections[0]
	h := s.Header
	if h.Event != "cpu-clock:ppp" || h.Samples != 16000 || h.SamplesRaw != "16K" || h.EventCount != 4141750000 || h.LostSamples == nil || *h.LostSamples != 0 {
		t.Errorf("header %+v", h)
	}
	if len(s.Rows) != 49 {
		t.Errorf("%d rows, want 49", len(s.Rows))
	}
	r := s.Rows[1]
	if r.Overhead != 0.085 || r.Command != "CPU 1/TCG" || r.SharedObject != "[kernel.kallsyms]" || r.SymbolKind != "k" || r.Symbol != "pvm_irq_enable" {
		t.Errorf("row 1 %+v", r)
	}
	j := s.Rows[7]
	if j.SharedObject != "[JIT] tid 12619" || j.JITTID != 12619 || j.Address == nil || *j.Address != 0x7f1500b15350 || j.SymbolKind != "." {
		t.Errorf("JIT row %+v", j)
	}
}

func TestPerfReportChildrenCallGraph(t *testing.T) {
	rep, err := ParsePerfReport(openT(t, "testdata/perf-report/real-busy-children.txt"))
	if err != nil {
		t.Fatal(err)
	}
	rows := rep.Sections[0].Rows
	var zero *PerfReportRow
	for i := range rows {
		if rows[i].SharedObject == "[unknown]" && rows[i].SymbolKind == "k" {
			zero = &rows[i]
			break
		}
	}
	if zero == nil || zero.Children == nil || *zero.Children != 0.0723 || zero.Overhead != 0 || zero.Address == nil || *zero.Address != 0 {
		t.Fatalf("row with children 7.23%% self 0.00%%: %+v", zero)
	}
	cg := zero.CallGraph
	if len(cg) != 5 || !cg[0].Root || cg[0].Symbol != "0" || !cg[1].Branch || cg[1].Frac != 0.0185 || cg[1].Symbol != "_int_free" || cg[4].Symbol != "__vfprintf_internal" {
		t.Errorf("call graph %+v", cg)
	}
}

// collapseReport turns a report into what a mail archive shows: single
// spaces and "> " quote marks.
func collapseReport(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		b.WriteString("> " + strings.Join(strings.Fields(l), " ") + "\n")
	}
	return b.String()
}

func TestPerfReportCollapsed(t *testing.T) {
	for _, name := range []string{"fixture-stdio.txt", "real-busy-g.txt", "real-busy-children.txt", "real-busy-caller.txt", "real-two-events-n.txt", "real-sort-pid-period.txt", "real-busy-nog.txt", "real-runner-sort-dso-symbol.txt", "pub-lkml-2024-perf610-group-period.txt", "pub-perf-wiki-perf3.0-events-header.txt"} {
		data, err := os.ReadFile("testdata/perf-report/" + name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ParsePerfReport(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParsePerfReport(strings.NewReader(collapseReport(string(data))))
		if err != nil {
			t.Fatalf("%s collapsed: %v", name, err)
		}
		norm := func(r *PerfReport) {
			for i := range r.Sections {
				for j := range r.Sections[i].Rows {
					for k := range r.Sections[i].Rows[j].CallGraph {
						r.Sections[i].Rows[j].CallGraph[k].Column = 0
					}
				}
			}
		}
		norm(want)
		norm(got)
		if !reflect.DeepEqual(want, got) {
			for j := range want.Sections[0].Rows {
				if j >= len(got.Sections[0].Rows) || !reflect.DeepEqual(want.Sections[0].Rows[j], got.Sections[0].Rows[j]) {
					t.Fatalf("%s: collapsed row %d differs:\nwant %+v\ngot  %+v", name, j, want.Sections[0].Rows[j], got.Sections[0].Rows[min(j, len(got.Sections[0].Rows)-1)])
				}
			}
			t.Fatalf("%s: collapsed parse differs", name)
		}
	}
}

func TestPerfReportErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "perfparse: perf report: no rows"},
		{"# Samples: x of event 'a'\n", "perfparse: 1: perf report: samples"},
		{"# Overhead  Command\n# ........  .......\n#\n    hello world\n", "perfparse: 4: perf report: expected a row"},
	} {
		_, err := ParsePerfReport(strings.NewReader(tc.in))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want prefix %q", tc.in, err, tc.want)
		}
	}
}

// repeatReader yields header once, then body repeatedly up to n bytes.
type repeatReader struct {
	header, body []byte
	n, off       int64
	pos          int
	inHeader     bool
}

func newRepeatReader(header, body []byte, n int64) *repeatReader {
	return &repeatReader{header: header, body: body, n: n, inHeader: true}
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, io.EOF
	}
	src := r.body
	if r.inHeader {
		src = r.header
	}
	k := copy(p, src[r.pos:])
	r.pos += k
	r.off += int64(k)
	if r.pos == len(src) {
		r.pos, r.inHeader = 0, false
	}
	return k, nil
}

func reportHeaderBody(t testing.TB) ([]byte, []byte) {
	data, err := os.ReadFile("testdata/perf-report/real-busy-children.txt")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte("#\n    "))
	return data[:i+2], data[i+2:]
}

// TestPerfReportConstantMemory streams 100 MB of report through the reader
// and checks the live heap stays small.
func TestPerfReportConstantMemory(t *testing.T) {
	testenv.SkipIfShort(t, "streams 100 MB")
	h, b := reportHeaderBody(t)
	rr := NewPerfReportReader(newRepeatReader(h, b, 100<<20))
	var ms runtime.MemStats
	var maxHeap uint64
	rows := 0
	for rr.Next() {
		rows++
		if rows%200000 == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			maxHeap = max(maxHeap, ms.HeapAlloc)
		}
	}
	if err := rr.Err(); err != nil {
		t.Fatal(err)
	}
	if rows < 100000 {
		t.Fatalf("only %d rows", rows)
	}
	t.Logf("%d rows from 100 MB, live heap at most %.1f MB", rows, float64(maxHeap)/(1<<20))
	if maxHeap > 32<<20 {
		t.Errorf("live heap reached %d MB while streaming", maxHeap>>20)
	}
}

// BenchmarkPerfReport measures streaming throughput (MB/s) over a report
// with --children columns and -g call graphs.
func BenchmarkPerfReport(b *testing.B) {
	h, body := reportHeaderBody(b)
	const size = 16 << 20
	buf := make([]byte, 0, size+len(body))
	buf = append(buf, h...)
	for len(buf) < size {
		buf = append(buf, body...)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		rr := NewPerfReportReader(bytes.NewReader(buf))
		for rr.Next() {
		}
		if err := rr.Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPerfReportFlat is the same without call graphs.
func BenchmarkPerfReportFlat(b *testing.B) {
	data, err := os.ReadFile("testdata/perf-report/fixture-stdio.txt")
	if err != nil {
		b.Fatal(err)
	}
	i := bytes.Index(data, []byte("#\n    "))
	h, body := data[:i+2], data[i+2:]
	const size = 16 << 20
	buf := make([]byte, 0, size+len(body))
	buf = append(buf, h...)
	for len(buf) < size {
		buf = append(buf, body...)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		rr := NewPerfReportReader(bytes.NewReader(buf))
		for rr.Next() {
		}
		if err := rr.Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// endless is /dev/zero with a guard: reading past limit bytes returns
// errPastLimit, so a reader that does not stop on its own fails the test
// instead of growing until the machine runs out.
type endless struct{ read, limit int }

var errPastLimit = errors.New("read past the test's limit")

func (e *endless) Read(p []byte) (int, error) {
	if e.read >= e.limit {
		return 0, errPastLimit
	}
	n := min(len(p), e.limit-e.read)
	clear(p[:n])
	e.read += n
	return n, nil
}

// A line without end (vnetbench parse perf-report /dev/zero) is bad input
// at the line bound, read in bounded memory: the streaming reader used to
// gather the one line until the machine ran out (5 GB in a minute).
func TestPerfReportEndlessLine(t *testing.T) {
	src := &endless{limit: 64 << 20}
	rr := NewPerfReportReader(src)
	for rr.Next() {
	}
	var se *SyntaxError
	if err := rr.Err(); !errors.As(err, &se) || se.Line != 1 || !strings.Contains(se.Msg, "longer than") {
		t.Fatalf("err %v, want a syntax error at line 1 saying the line is too long", err)
	}
	if src.read > 2*MaxLine {
		t.Errorf("read %d MiB of one line, want at most twice the %d MiB bound", src.read>>20, MaxLine>>20)
	}
}
