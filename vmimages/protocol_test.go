package vmimages

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// protocolEvents holds one event of every kind, agent's and lab init's,
// each with the fields it carries set.
var protocolEvents = []Event{
	{Ev: EvReady, BootMS: 2500, InitMS: 1200, Kernel: "6.12.57+deb12-amd64"},
	{Ev: EvReady, Uptime: 3.25},
	{Ev: EvStats, ID: 7, Eth0: &IfStats{RxPackets: 42, RxBytes: 4200}, Links: map[string]*IfStats{"52:54:00:12:34:56": {TxPackets: 9}},
		Flows: map[string]uint64{"9": 40}, FlowDrops: 2, XDPDrops: 3, Sink: SinkFlowCount, UptimeMS: 1234},
	{Ev: EvOK, ID: 8, Msg: "counted 42"},
	{Ev: EvError, ID: 9, Msg: "this kernel has no vsock sockmap support (Linux 6.4+)", Unsupported: true},
	{Ev: EvError, Uptime: 1.5, Msg: "read /lab.json: no such file"},
	{Ev: EvInit, Uptime: 0.9, Kernel: "6.1.0-99-fake"},
	{Ev: EvModules, Uptime: 1.1, StepMS: 12, Loaded: 5, Missing: []string{"vhost_vsock"}, KVM: "kvm_intel",
		NoKVM: "no vmx flag", Checked: []string{"virtio_net"}},
	{Ev: EvStart, Uptime: 1.2},
	{Ev: EvAlive, Uptime: 11.2},
	{Ev: EvExit, Uptime: 20.4, Code: 2},
}

// Every event kind survives both transports' encode and parse unchanged.
func TestEventRoundTrip(t *testing.T) {
	kinds := map[string]bool{}
	for _, ev := range protocolEvents {
		kinds[ev.Ev] = true
		b, err := EncodeEvent(ev)
		if err != nil {
			t.Fatalf("EncodeEvent(%+v): %v", ev, err)
		}
		if bytes.Count(b, []byte("\n")) != 1 || !bytes.HasSuffix(b, []byte("\n")) {
			t.Errorf("EncodeEvent(%s) = %q, want one line", ev.Ev, b)
		}
		if got, ok := ParseEvent(string(b)); !ok || !reflect.DeepEqual(got, ev) {
			t.Errorf("agent port: ParseEvent(%q) = %+v, %v; want %+v", b, got, ok, ev)
		}
		c, err := EncodeConsoleEvent(ev)
		if err != nil {
			t.Fatalf("EncodeConsoleEvent(%+v): %v", ev, err)
		}
		lines := strings.Split(strings.TrimSuffix(string(c), "\n"), "\n")
		if len(lines) != 2 || lines[0] != "" || !strings.HasPrefix(lines[1], ConsolePrefix) {
			t.Errorf("EncodeConsoleEvent(%s) = %q, want a newline, then %q and the JSON on a line", ev.Ev, c, ConsolePrefix)
			continue
		}
		if got, ok := ParseConsoleEvent(lines[1]); !ok || !reflect.DeepEqual(got, ev) {
			t.Errorf("console: ParseConsoleEvent(%q) = %+v, %v; want %+v", lines[1], got, ok, ev)
		}
	}
	for _, k := range []string{EvReady, EvStats, EvOK, EvError, EvInit, EvModules, EvStart, EvAlive, EvExit} {
		if !kinds[k] {
			t.Errorf("no %q event in protocolEvents", k)
		}
	}
}

// The lab's wire names stay what they were: an init and a modules line as
// lab init printed them before the two protocols were one.
func TestConsoleEventWireNames(t *testing.T) {
	line := `VNBLAB {"ev":"modules","uptime":1.5,"ms":12,"loaded":3,"missing":["x"],"kvm":"kvm_amd","no_kvm":"n","checked":["y"]}`
	want := Event{Ev: EvModules, Uptime: 1.5, StepMS: 12, Loaded: 3, Missing: []string{"x"}, KVM: "kvm_amd", NoKVM: "n", Checked: []string{"y"}}
	if got, ok := ParseConsoleEvent(line); !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseConsoleEvent(%q) = %+v, %v; want %+v", line, got, ok, want)
	}
	b, _ := EncodeConsoleEvent(Event{Ev: EvExit, Uptime: 20.5, Code: 2})
	if want := "\nVNBLAB {\"ev\":\"exit\",\"uptime\":20.5,\"code\":2}\n"; string(b) != want {
		t.Errorf("EncodeConsoleEvent(exit) = %q, want %q", b, want)
	}
}

// A console line holds an event wherever its prefix stands: kernel output
// or the inner command's text before it is noise. A line without the
// prefix, with broken JSON or without "ev" holds none.
func TestParseConsoleEventNoise(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Event
		ok   bool
	}{
		{"[    0.912345] virtio_net virtio1: VNBLAB {\"ev\":\"init\",\"uptime\":5.3,\"kernel\":\"6.1.0\"}", Event{Ev: EvInit, Uptime: 5.3, Kernel: "6.1.0"}, true},
		{"hello from insVNBLAB {\"ev\":\"exit\",\"code\":2}\r", Event{Ev: EvExit, Code: 2}, true},
		{"VNBLAB {\"ev\":\"alive\"}  ", Event{Ev: EvAlive}, true},
		{"VNBLAB {broken", Event{}, false},
		{"VNBLAB {\"uptime\":1}", Event{}, false},
		{"{\"ev\":\"ready\"}", Event{}, false}, // the agent port's framing is no console event
		{"[    0.1] Linux version 6.1", Event{}, false},
	} {
		got, ok := ParseConsoleEvent(tc.line)
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseConsoleEvent(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// On the agent port (and its serial console fallback) kernel output may
// share an event's line; a line without an event object is none.
func TestParseEventNoise(t *testing.T) {
	got, ok := ParseEvent(`[    2.5] random: crng init done{"ev":"ok","id":3}`)
	if want := (Event{Ev: EvOK, ID: 3}); !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseEvent(noise + ok) = %+v, %v; want %+v", got, ok, want)
	}
	for _, line := range []string{`{"id":3}`, `{"ev":"ok"`, "[    0.1] Linux version 6.1", ""} {
		if got, ok := ParseEvent(line); ok {
			t.Errorf("ParseEvent(%q) = %+v, want no event", line, got)
		}
	}
}
