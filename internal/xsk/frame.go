package xsk

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// Offsets in a frame of the two fields that differ between flows.
const (
	udpSrcPortOff = 14 + 20
	udpCsumOff    = 14 + 20 + 6
)

// HeaderLen is the smallest frame: Ethernet (14) + IPv4 (20) + UDP (8)
// headers, no payload.
const HeaderLen = 14 + 20 + 8

// MaxFrameSize is the largest frame: one UMEM chunk.
const MaxFrameSize = 4096

// Frame says what the frames look like. The zero values of the addresses
// and ports are replaced by the defaults noted.
type Frame struct {
	// Size is the frame length in bytes: Ethernet + IPv4 + UDP headers
	// + payload, without FCS (as testpmd's --txpkts and pktgen's
	// pkt_size+4 count it). HeaderLen..MaxFrameSize; default 64.
	Size int
	// SrcMAC defaults to the device's own address; DstMAC to broadcast.
	SrcMAC, DstMAC net.HardwareAddr
	// SrcIP defaults to 10.0.0.1, DstIP to 10.0.0.2 (IPv4 only).
	SrcIP, DstIP netip.Addr
	// SrcPort and DstPort default to 9 (discard).
	SrcPort, DstPort uint16
	// SrcPorts is how many consecutive UDP source ports, from SrcPort,
	// the frames cycle through (flows for RSS/RPS); default 1.
	SrcPorts int
}

func (f Frame) withDefaults() Frame {
	if f.Size == 0 {
		f.Size = 64
	}
	if f.DstMAC == nil {
		f.DstMAC = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	if !f.SrcIP.IsValid() {
		f.SrcIP = netip.AddrFrom4([4]byte{10, 0, 0, 1})
	}
	if !f.DstIP.IsValid() {
		f.DstIP = netip.AddrFrom4([4]byte{10, 0, 0, 2})
	}
	if f.SrcPort == 0 {
		f.SrcPort = 9
	}
	if f.DstPort == 0 {
		f.DstPort = 9
	}
	if f.SrcPorts == 0 {
		f.SrcPorts = 1
	}
	return f
}

func (f Frame) validate() error {
	switch {
	case f.Size < HeaderLen:
		return invalidf("frame size %d is below %d bytes (Ethernet 14 + IPv4 20 + UDP 8 headers); use %d or more", f.Size, HeaderLen, HeaderLen)
	case f.Size > MaxFrameSize:
		return invalidf("frame size %d is above %d bytes (one UMEM chunk); use %d or less", f.Size, MaxFrameSize, MaxFrameSize)
	case !f.SrcIP.Is4() || !f.DstIP.Is4():
		return invalidf("addresses %s -> %s: IPv4 only", f.SrcIP, f.DstIP)
	case len(f.SrcMAC) != 6 && f.SrcMAC != nil, len(f.DstMAC) != 6:
		return invalidf("MAC addresses %s -> %s: want 6 bytes each", f.SrcMAC, f.DstMAC)
	case f.SrcPorts < 1 || int(f.SrcPort)+f.SrcPorts-1 > 65535:
		return invalidf("%d source ports from %d: want 1 or more, ending at 65535 at most", f.SrcPorts, f.SrcPort)
	}
	return nil
}

// Build returns the frames, one per source port (len = SrcPorts), each
// Size bytes with correct IPv4 and UDP checksums and a zero payload. The
// defaults apply to zero fields; a nil SrcMAC is all zeros here.
func (f Frame) Build() ([][]byte, error) {
	f = f.withDefaults()
	if err := f.validate(); err != nil {
		return nil, err
	}
	src := f.SrcMAC
	if src == nil {
		src = make(net.HardwareAddr, 6)
	}
	payload := make([]byte, f.Size-HeaderLen)
	out := make([][]byte, f.SrcPorts)
	buf := gopacket.NewSerializeBuffer()
	for i := range out {
		eth := &layers.Ethernet{SrcMAC: src, DstMAC: f.DstMAC, EthernetType: layers.EthernetTypeIPv4}
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Flags: layers.IPv4DontFragment, Protocol: layers.IPProtocolUDP,
			SrcIP: f.SrcIP.AsSlice(), DstIP: f.DstIP.AsSlice()}
		udp := &layers.UDP{SrcPort: layers.UDPPort(int(f.SrcPort) + i), DstPort: layers.UDPPort(f.DstPort)}
		if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
			return nil, err
		}
		err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
			eth, ip, udp, gopacket.Payload(payload))
		if err != nil {
			return nil, fmt.Errorf("build frame: %w", err)
		}
		b := buf.Bytes()
		// gopacket pads Ethernet frames to the 60-byte minimum after the
		// IP and UDP lengths are set: a smaller Size drops that padding.
		if len(b) > f.Size && f.Size < 60 {
			b = b[:f.Size]
		}
		if len(b) != f.Size {
			return nil, fmt.Errorf("build frame: %d bytes, want %d", len(b), f.Size)
		}
		out[i] = append([]byte(nil), b...)
	}
	return out, nil
}

// flows returns each frame's UDP source port and checksum, the only bytes
// in which the frames Build returns differ (the IPv4 header does not
// cover the ports).
func flows(frames [][]byte) [][4]byte {
	out := make([][4]byte, len(frames))
	for i, f := range frames {
		copy(out[i][:2], f[udpSrcPortOff:])
		copy(out[i][2:], f[udpCsumOff:])
	}
	return out
}
