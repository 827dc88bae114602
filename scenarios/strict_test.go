package scenarios

import (
	"strings"
	"testing"
)

// The yaml.v3 KnownFields(true) backstop agrees with the schema walker:
// it accepts every built-in and rejects unknown keys at any depth.
func TestStrictDecodeBackstop(t *testing.T) {
	for _, b := range Builtins() {
		data, _ := BuiltinData(b.Name)
		if err := strictDecode(b.Name, data); err != nil {
			t.Errorf("%s: %v", b.Name, err)
		}
	}
	for _, src := range []string{
		"generator: {iperf3: {}}\nbogus: 1\n",
		"generator: {pktgen: {pkt_sise: 60}}\n",
		"guest: {kernel: {imag: x}}\ngenerator: {iperf3: {}}\n",
		"perf: {record: {top: 1, callgraph: true}}\ngenerator: {iperf3: {}}\n",
	} {
		err := strictDecode("t.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("%q: %v", src, err)
		}
	}
}
