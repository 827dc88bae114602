package perfparse

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seed adds every input under testdata/<kind> (and a collapsed, quoted
// copy of each) to the fuzz corpus.
func seed(f *testing.F, kinds ...string) {
	for _, kind := range kinds {
		ents, err := os.ReadDir(filepath.Join("testdata", kind))
		if err != nil {
			f.Fatal(err)
		}
		for _, e := range ents {
			if e.IsDir() || strings.HasSuffix(e.Name(), ".golden") {
				continue
			}
			data, err := os.ReadFile(filepath.Join("testdata", kind, e.Name()))
			if err != nil {
				f.Fatal(err)
			}
			if len(data) > 64<<10 {
				data = data[:64<<10]
			}
			f.Add(data)
			f.Add([]byte(collapseReport(string(data))))
		}
	}
}

// checkErr fails unless err is nil or a *SyntaxError with a sane line.
func checkErr(t *testing.T, data []byte, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("error is not a *SyntaxError: %T %v", err, err)
	}
	if se.Line < 0 || se.Line > bytes.Count(data, []byte{'\n'})+1 {
		t.Fatalf("error line %d outside the input (%d lines): %v", se.Line, bytes.Count(data, []byte{'\n'})+1, err)
	}
}

func FuzzPktgen(f *testing.F) {
	seed(f, "pktgen")
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParsePktgen(bytes.NewReader(data))
		checkErr(t, data, err)
		if err == nil && d.Result != nil && d.Result.Run {
			checkPktgenBytes(t, d)
		}
	})
}

// checkPktgenBytes checks a run result's Bytes: Packets × PktSize, or in
// IMIX mode the per-size counts' bytes when they add up to Packets.
func checkPktgenBytes(t *testing.T, d *PktgenDevice) {
	r := d.Result
	if !r.Imix {
		if r.Bytes != r.Packets*uint64(max(r.PktSize, 0)) || r.BytesUnknown || r.BitsPerSec != r.PPS*8*float64(max(r.PktSize, 0)) {
			t.Fatalf("bytes %d != packets %d × size %d", r.Bytes, r.Packets, r.PktSize)
		}
		return
	}
	if len(d.Imix) == 0 {
		if r.Bytes != 0 || !r.BytesUnknown {
			t.Fatalf("imix from the bps alone: bytes %d, unknown %v", r.Bytes, r.BytesUnknown)
		}
		return
	}
	var n, b uint64
	counted := true
	for _, e := range d.Imix {
		if e.Count == nil {
			counted = false
			break
		}
		n, b = n+*e.Count, b+*e.Count*e.SizeBytes
	}
	exact := counted && n == r.Packets
	if exact && (r.Bytes != b || r.BytesUnknown) || !exact && (r.Bytes != 0 || !r.BytesUnknown) {
		t.Fatalf("imix: bytes %d (unknown %v), packets %d, counts %+v", r.Bytes, r.BytesUnknown, r.Packets, d.Imix)
	}
}

func FuzzKpktgend(f *testing.F) {
	seed(f, "kpktgend")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := ParseKpktgend(bytes.NewReader(data))
		checkErr(t, data, err)
	})
}

func FuzzPktgenScript(f *testing.F) {
	seed(f, "pktgen-script")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := ParsePktgenScript(bytes.NewReader(data))
		checkErr(t, data, err)
	})
}

func FuzzIperf3(f *testing.F) {
	seed(f, "iperf3")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := ParseIperf3(bytes.NewReader(data))
		checkErr(t, data, err)
	})
}

func FuzzPerfStat(f *testing.F) {
	seed(f, "perf-stat")
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParsePerfStat(bytes.NewReader(data))
		checkErr(t, data, err)
		if err == nil {
			for _, r := range st.Rows {
				if r.Event == "" {
					t.Fatalf("row without event: %+v", r)
				}
			}
		}
	})
}

func FuzzPerfReport(f *testing.F) {
	seed(f, "perf-report")
	f.Fuzz(func(t *testing.T, data []byte) {
		rr := NewPerfReportReader(bytes.NewReader(data))
		n := 0
		for rr.Next() {
			n++
			if rr.Row().Line < 1 {
				t.Fatalf("row without a line number: %+v", rr.Row())
			}
		}
		checkErr(t, data, rr.Err())
		if n > bytes.Count(data, []byte{'\n'})+1 {
			t.Fatalf("%d rows from %d lines", n, bytes.Count(data, []byte{'\n'})+1)
		}
	})
}

func FuzzTrafgen(f *testing.F) {
	seed(f, "trafgen")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := ParseTrafgen(bytes.NewReader(data))
		checkErr(t, data, err)
	})
}

func FuzzProcNetDev(f *testing.F) {
	seed(f, "netdev")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := ParseProcNetDev(bytes.NewReader(data))
		checkErr(t, data, err)
	})
}

func FuzzTCQdisc(f *testing.F) {
	seed(f, "tc")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := ParseTCQdisc(bytes.NewReader(data))
		checkErr(t, data, err)
	})
}

// FuzzAuto runs detection and the detected parser on anything.
func FuzzAuto(f *testing.F) {
	seed(f, "pktgen", "perf-stat", "iperf3", "trafgen", "tc", "testpmd")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := all.Parse("auto", "in", bytes.NewReader(data))
		checkErr(t, data, err)
	})
}

func FuzzTestpmd(f *testing.F) {
	seed(f, "testpmd")
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, err := ParseTestpmd(bytes.NewReader(data))
		checkErr(t, data, err)
		if err == nil && len(tp.PortStats)+len(tp.Forward)+len(tp.StreamStats) == 0 && tp.Accumulated == nil {
			t.Fatal("no error and no statistics")
		}
	})
}
