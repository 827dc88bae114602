package xsk

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/workload"
	"golang.org/x/sys/unix"
)

func TestFrameBuild(t *testing.T) {
	src := net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	dst := net.HardwareAddr{0x52, 0x54, 0, 0x12, 0x34, 0x56}
	for _, size := range []int{42, 43, 59, 60, 64, 512, 1024, 1514, 4096} {
		f := Frame{Size: size, SrcMAC: src, DstMAC: dst, SrcPort: 1000, SrcPorts: 3,
			SrcIP: netip.MustParseAddr("192.0.2.1"), DstIP: netip.MustParseAddr("192.0.2.2"), DstPort: 7}
		frames, err := f.Build()
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if len(frames) != 3 {
			t.Fatalf("size %d: %d frames, want 3", size, len(frames))
		}
		for i, b := range frames {
			if len(b) != size {
				t.Errorf("size %d frame %d: %d bytes", size, i, len(b))
			}
			if err := verifyFrame(b); err != nil {
				t.Errorf("size %d frame %d: %v", size, i, err)
			}
			p := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
			if el := p.ErrorLayer(); el != nil {
				t.Fatalf("size %d: gopacket: %v", size, el.Error())
			}
			eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
			ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			udp := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
			if !bytes.Equal(eth.SrcMAC, src) || !bytes.Equal(eth.DstMAC, dst) {
				t.Errorf("MACs %s -> %s", eth.SrcMAC, eth.DstMAC)
			}
			if ip.SrcIP.String() != "192.0.2.1" || ip.DstIP.String() != "192.0.2.2" || ip.TTL != 64 {
				t.Errorf("IPv4 %s -> %s ttl %d", ip.SrcIP, ip.DstIP, ip.TTL)
			}
			if int(udp.SrcPort) != 1000+i || udp.DstPort != 7 || int(udp.Length) != size-34 {
				t.Errorf("size %d frame %d: UDP %d -> %d length %d", size, i, udp.SrcPort, udp.DstPort, udp.Length)
			}
			if len(udp.Payload) != size-HeaderLen {
				t.Errorf("size %d: payload %d bytes", size, len(udp.Payload))
			}
		}
	}
}

// Frames of different flows differ only in the UDP source port and
// checksum, which is what the send loop rewrites.
func TestFrameFlows(t *testing.T) {
	frames, err := Frame{Size: 100, SrcPort: 65530, SrcPorts: 6}.Build()
	if err != nil {
		t.Fatal(err)
	}
	fl := flows(frames)
	for i, f := range frames {
		g := append([]byte(nil), frames[0]...)
		copy(g[udpSrcPortOff:], fl[i][:2])
		copy(g[udpCsumOff:], fl[i][2:])
		if !bytes.Equal(f, g) {
			t.Errorf("frame %d is not frame 0 with its flow's port and checksum:\n% x\n% x", i, f, g)
		}
	}
}

func TestFrameDefaults(t *testing.T) {
	frames, err := Frame{}.Build()
	if err != nil {
		t.Fatal(err)
	}
	p := gopacket.NewPacket(frames[0], layers.LayerTypeEthernet, gopacket.Default)
	ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	udp := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	if len(frames) != 1 || len(frames[0]) != 64 || ip.SrcIP.String() != "10.0.0.1" || ip.DstIP.String() != "10.0.0.2" ||
		udp.SrcPort != 9 || udp.DstPort != 9 || eth.DstMAC.String() != "ff:ff:ff:ff:ff:ff" {
		t.Errorf("defaults: %d frames of %d bytes, %s -> %s, ports %d -> %d, dst %s", len(frames), len(frames[0]),
			ip.SrcIP, ip.DstIP, udp.SrcPort, udp.DstPort, eth.DstMAC)
	}
}

func TestFrameInvalid(t *testing.T) {
	for _, c := range []struct {
		f    Frame
		want string
	}{
		{Frame{Size: 41}, "frame size 41 is below 42 bytes (Ethernet 14 + IPv4 20 + UDP 8 headers); use 42 or more"},
		{Frame{Size: 4097}, "frame size 4097 is above 4096"},
		{Frame{DstIP: netip.MustParseAddr("2001:db8::1")}, "IPv4 only"},
		{Frame{SrcPort: 65535, SrcPorts: 2}, "2 source ports from 65535"},
		{Frame{DstMAC: net.HardwareAddr{1, 2, 3}}, "want 6 bytes"},
	} {
		_, err := c.f.Build()
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrInvalid with %q", c.f, err, c.want)
		}
	}
}

func TestConfigInvalid(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "no device"},
		{Config{Dev: "x", Mode: "fast"}, `mode "fast"`},
		{Config{Dev: "x", Queues: []int{0, 0}}, "distinct queue ids"},
		{Config{Dev: "x", Queues: []int{-1}}, "distinct queue ids"},
		{Config{Dev: "x", RingSize: 100}, "power of two"},
		{Config{Dev: "x", Batch: 4096}, "batch 4096"},
		{Config{Dev: "x", CPUs: []int{0, 1}}, "2 CPUs for 1 queues"},
		{Config{Dev: "x", Frame: Frame{Size: 20}}, "frame size 20"},
	} {
		_, err := Open(c.cfg)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrInvalid with %q", c.cfg, err, c.want)
		}
	}
}

func TestSocketError(t *testing.T) {
	err := socketError(unix.EAFNOSUPPORT)
	if !errors.Is(err, ErrNoAFXDP) || !errors.Is(err, fault.ErrCapability) || err.Error() != "kernel has no AF_XDP sockets (EAFNOSUPPORT: a kernel built with CONFIG_XDP_SOCKETS=y has them)" {
		t.Errorf("EAFNOSUPPORT: %v", err)
	}
	if err := socketError(unix.EPERM); !errors.Is(err, unix.EPERM) || !errors.Is(err, fault.ErrCapability) || !strings.Contains(err.Error(), "run as root") {
		t.Errorf("EPERM: %v", err)
	}
	why, ok := workload.IsUnsupported(unsupported(ZeroCopy, "veth", unix.EOPNOTSUPP))
	if !ok || why != "unsupported (EOPNOTSUPP: this kernel's veth has no AF_XDP zero-copy)" {
		t.Errorf("unsupported: %q, %v", why, ok)
	}
}
