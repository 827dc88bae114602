package results

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// FuzzParseResults: any bytes give samples or an error, never a panic;
// good bytes never exceed the input.
func FuzzParseResults(f *testing.F) {
	f.Add([]byte(`{"schema":1,"run":"r","cell":"tap/pktgen-t1","rep":0,"kernel":"stock","axes":{"backend":"tap"},` +
		`"metrics":{"tx_pps":452000},"threads":[{"i":0,"tx_pps":452000,"errors":3,"lost_pps":1.5}]}` + "\n"))
	f.Add([]byte(`{"schema":1,"cell":"a","rep":1}` + "\n" + `{"schema":1,"cell":"a","re`))
	f.Add([]byte("{}\n{\"schema\":99}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		samples, good, _, err := parseResults("results.jsonl", data)
		if err != nil {
			return
		}
		if good > len(data) || good < 0 {
			t.Fatalf("good = %d of %d bytes", good, len(data))
		}
		for _, s := range samples {
			_, _ = s.Value("tx_pps_thread")
			_, _ = s.Value("lost_pps_thread")
		}
	})
}

// FuzzReadBenchfmt: any Go benchmark format input gives samples or an
// error, never a panic, and the samples write back as benchfmt.
func FuzzReadBenchfmt(f *testing.F) {
	real, err := os.ReadFile("testdata/gotest.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)
	f.Add([]byte("kernel: stock\nBenchmarkVnetbench/backend=tap/generator=pktgen-t1 1 452000 tx_pps 1154000 lost_pps\n"))
	f.Add([]byte("BenchmarkX//y 1 5 ns/op\n")) // panicked: an empty name part
	f.Add([]byte("BenchmarkX/-3/a=b-8 10 2.5 ns/op 3 B/op\naccel: tcg\nBenchmarkX/kernel=p 1 1 tx_pps\n"))
	f.Add([]byte("Unit tx_pps better=higher\nBenchmarkX 1 1e9 tx_pps\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		set := &Set{Env: map[string]*Env{}}
		if err := set.readBenchfmt(bytes.NewReader(data), "fuzz.txt"); err != nil {
			return
		}
		for _, s := range set.Samples {
			if s.Kernel == "" || s.Cell == "" {
				t.Fatalf("sample without kernel or cell: %+v", s)
			}
		}
		var buf bytes.Buffer
		if err := WriteBenchfmt(&buf, set); err != nil {
			t.Fatalf("write back: %v", err)
		}
	})
}

// A name with an empty part is an input error naming the line, not a
// panic (vnetbench report crashed on it).
func TestBenchfmtEmptyNamePart(t *testing.T) {
	set := &Set{Env: map[string]*Env{}}
	err := set.readBenchfmt(strings.NewReader("BenchmarkOK 1 1 ns/op\nBenchmarkX//y 1 5 ns/op\n"), "b.txt")
	if !errors.Is(err, fault.ErrInput) || err.Error() != "b.txt:2: benchmark name BenchmarkX//y has an empty /part (go test never writes one); remove the extra /" {
		t.Errorf("err = %v", err)
	}
}
