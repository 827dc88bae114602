package results

import (
	"testing"
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
