package dropmon

import (
	"os"
	"strings"
	"testing"
)

func TestParseFormat618(t *testing.T) {
	f, err := os.Open("testdata/kfree_skb-format-6.18.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ParseFormat(f)
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[uint32]string{2: "NOT_SPECIFIED", 3: "NO_SOCKET", 64: "QDISC_DROP", 80: "FULL_RING", 129: "MAX"} {
		if got[v] != want {
			t.Errorf("reason %d = %q, want %q", v, got[v], want)
		}
	}
	if len(got) != 128 {
		t.Errorf("%d reasons, want 128 (2..129)", len(got))
	}
	if _, err := ParseFormat(strings.NewReader("print fmt: \"%p\", REC->skbaddr")); err == nil {
		t.Error("a format without __print_symbolic parsed")
	}
}

func TestKallsymsFunc(t *testing.T) {
	f, err := os.Open("testdata/kallsyms-6.18-excerpt.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := ParseKallsyms(f)
	if err != nil {
		t.Fatal(err)
	}
	n := NewNames(map[uint32]string{80: "FULL_RING"}, syms)
	for addr, want := range map[uint64]string{
		0xffffffff81dfb900: "tun_net_xmit",       // its first byte
		0xffffffff81dfbb17: "tun_net_xmit",       // inside
		0xffffffff8123b440: "tun_net_xmit",       // tun_net_xmit.cold
		0xffffffff81e931c5: "sk_skb_reason_drop", // inside
		0xffffffff820a6f00: "__udp4_lib_rcv",     // inside
		0xffffffff81dfb8f4: "__pfx_tun_net_xmit", // the padding before it
		0x1000:             "0x1000",             // before every symbol
	} {
		if got := n.Func(addr); got != want {
			t.Errorf("Func(%#x) = %q, want %q", addr, got, want)
		}
	}
	if got := n.Reason(80); got != "FULL_RING" {
		t.Errorf("Reason(80) = %q", got)
	}
	if got := n.Reason(7); got != "reason 7" {
		t.Errorf("Reason(7) = %q", got)
	}
	c := n.Counts(map[Key]uint64{{Addr: 0xffffffff81dfbb17, Reason: 80}: 3, {Addr: 0xffffffff8123b440, Reason: 80}: 4})
	if len(c) != 1 || c["FULL_RING@tun_net_xmit"] != 7 {
		t.Errorf("Counts = %v, want FULL_RING@tun_net_xmit: 7", c)
	}
	hidden := "0000000000000000 T _stext\n0000000000000000 t tun_net_xmit\n"
	if _, err := ParseKallsyms(strings.NewReader(hidden)); err == nil {
		t.Error("kallsyms with hidden addresses parsed")
	}
}

func TestDelta(t *testing.T) {
	got := Delta(map[string]uint64{"a": 5, "b": 2, "c": 9}, map[string]uint64{"a": 8, "b": 2, "c": 3, "d": 1})
	if len(got) != 2 || got["a"] != 3 || got["d"] != 1 {
		t.Fatalf("Delta = %v", got)
	}
}
