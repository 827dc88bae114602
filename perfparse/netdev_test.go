package perfparse

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

func TestNetdevSysfs(t *testing.T) {
	fsys := fstest.MapFS{
		"rx_packets": {Data: []byte("12\n")},
		"tx_packets": {Data: []byte("454816\n")},
		"tx_dropped": {Data: []byte("395226\n")},
	}
	s, err := ParseNetdevStats(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if s.RxPackets != 12 || s.TxPackets != 454816 || s.TxDropped != 395226 || len(s.Counters) != 3 {
		t.Errorf("%+v", s)
	}
	fsys["rx_bytes"] = &fstest.MapFile{Data: []byte("lots\n")}
	if _, err := ParseNetdevStats(fsys); err == nil || !strings.Contains(err.Error(), "rx_bytes:1: ") {
		t.Errorf("bad counter: %v", err)
	}
	if _, err := ParseNetdevStats(fstest.MapFS{}); err == nil {
		t.Error("empty directory parsed")
	}
	m := NewNetdevStats("eth0", map[string]uint64{"rx_packets": 5, "rx_dropped": 1})
	if m.RxPackets != 5 || m.RxDropped != 1 || m.Device != "eth0" {
		t.Errorf("%+v", m)
	}
}

func TestProcNetDev(t *testing.T) {
	st, err := ParseProcNetDev(openT(t, "testdata/netdev/real-netns-tap.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 || st[1].Device != "vnbpp0" || st[1].TxPackets != 454816 || st[1].TxDropped != 395226 || st[1].TxBytes != 27289076 || st[1].Counters["collisions"] != 0 {
		t.Errorf("%+v", st)
	}
	for _, in := range []string{"", "lo: 1 2 3\n", "Inter-|\n face |a|b|c\n"} {
		if _, err := ParseProcNetDev(strings.NewReader(in)); err == nil {
			t.Errorf("%q parsed", in)
		}
	}
}

// ip -s -s link's text and ip -j -s -s link's JSON of the same devices
// (a veth that carried traffic, a tap) give the same counters under the
// sysfs names: the text's column words are mapped whichever line they
// are on (missed, overrun, transns).
func TestIPLinkTextMatchesJSON(t *testing.T) {
	text, err := ParseProcNetDev(openT(t, "testdata/netdev/real-ip-s-s-link-netns-veth-tap.txt"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := ParseProcNetDev(openT(t, "testdata/netdev/real-ip-j-p-s-s-link-netns-veth-tap.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(text) != 3 || len(js) != 3 {
		t.Fatalf("%d and %d devices", len(text), len(js))
	}
	for i := range text {
		if !reflect.DeepEqual(text[i], js[i]) {
			t.Errorf("text %+v\njson %+v", text[i], js[i])
		}
	}
	veth := text[1]
	if veth.Device != "vnbp0" || veth.TxPackets != 1749 || veth.TxBytes != 2572439 || veth.Counters["rx_missed_errors"] != 0 || veth.Counters["carrier_changes"] != 4 {
		t.Errorf("%+v", veth)
	}
}
