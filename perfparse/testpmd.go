package perfparse

import (
	"io"
	"strconv"
	"strings"
)

// Testpmd is what dpdk-testpmd printed: its port statistics (the
// periodic ones of --stats-period, and `show port stats` in interactive
// mode) and the forward statistics it prints when forwarding stops
// (`stop`, SIGINT, end of run). Counters keep testpmd's names in the JSON
// tags' comments; rates are in packets/s and bit/s, as testpmd computes
// them.
type Testpmd struct {
	// Mode, Ports, Cores and Streams come from the "txonly packet
	// forwarding - ports=1 - cores=1 - streams=1" line (DPDK 1.x/2.x:
	// "io packet forwarding - CRC stripping disabled - ..." and "nb
	// forwarding cores=1 - nb forwarding ports=2", without streams; "" and
	// 0 when absent); PacketLen from "packet len=64".
	Mode      string `json:"mode,omitempty"`
	Ports     int    `json:"ports,omitempty"`
	Cores     int    `json:"cores,omitempty"`
	Streams   int    `json:"streams,omitempty"`
	PacketLen int    `json:"packet_len,omitempty"`
	// PortStats are the "NIC statistics for port N" blocks, in order.
	PortStats []TestpmdPortStats `json:"port_stats"`
	// StreamStats are the "Forward Stats for RX Port= P/Queue= Q -> TX
	// Port= P/Queue= Q" blocks testpmd prints when a port has several
	// streams.
	StreamStats []TestpmdStream `json:"stream_stats,omitempty"`
	// Forward are the "Forward statistics for port N" blocks; after
	// several stops, all of them in order.
	Forward []TestpmdForward `json:"forward"`
	// Accumulated is the last "Accumulated forward statistics for all
	// ports" block (nil when forwarding never stopped).
	Accumulated *TestpmdForward `json:"accumulated"`
	// Errors are the lines outside the statistics that say something
	// failed (an error, "failed", "cannot", "invalid": DPDK's EAL,
	// drivers and testpmd), as printed.
	Errors []string `json:"errors,omitempty"`
}

// TestpmdPortStats is one "NIC statistics for port N" block.
type TestpmdPortStats struct {
	Line int `json:"line"` // where the block starts
	Port int `json:"port"`
	// RX-packets, RX-missed, RX-bytes, RX-errors, RX-nombuf, TX-packets,
	// TX-errors, TX-bytes: the port's counters since it started.
	RxPackets uint64 `json:"rx_packets"`
	RxMissed  uint64 `json:"rx_missed"`
	RxBytes   uint64 `json:"rx_bytes"`
	RxErrors  uint64 `json:"rx_errors"`
	RxNombuf  uint64 `json:"rx_nombuf"`
	TxPackets uint64 `json:"tx_packets"`
	TxErrors  uint64 `json:"tx_errors"`
	TxBytes   uint64 `json:"tx_bytes"`
	// Throughput is true when the block has the "Throughput (since last
	// show)" rates: Rx-pps, Rx-bps, Tx-pps, Tx-bps over the time since the
	// previous block of this port (0 in the first block, which has no
	// previous one).
	Throughput bool    `json:"throughput"`
	RxPPS      float64 `json:"rx_pps"`
	RxBPS      float64 `json:"rx_bps"`
	TxPPS      float64 `json:"tx_pps"`
	TxBPS      float64 `json:"tx_bps"`
	// Other are counters this parser has no field for, by testpmd's name.
	Other map[string]uint64 `json:"other,omitempty"`
}

// TestpmdForward is one "Forward statistics for port N" block (Port -1
// for the accumulated block): packets forwarded since `start`.
type TestpmdForward struct {
	Line int `json:"line"`
	Port int `json:"port"`
	// RX-packets, RX-dropped, RX-total, TX-packets, TX-dropped (packets the
	// driver did not take: a full Tx ring), TX-total.
	RxPackets uint64 `json:"rx_packets"`
	RxDropped uint64 `json:"rx_dropped"`
	RxTotal   uint64 `json:"rx_total"`
	TxPackets uint64 `json:"tx_packets"`
	TxDropped uint64 `json:"tx_dropped"`
	TxTotal   uint64 `json:"tx_total"`
	// Other: RX-error, RX-nombufs, Bad-ipcsum and the like when printed.
	Other map[string]uint64 `json:"other,omitempty"`
}

// TestpmdStream is one forwarding stream's block.
type TestpmdStream struct {
	Line      int               `json:"line"`
	RxPort    int               `json:"rx_port"`
	RxQueue   int               `json:"rx_queue"`
	TxPort    int               `json:"tx_port"`
	TxQueue   int               `json:"tx_queue"`
	RxPackets uint64            `json:"rx_packets"`
	TxPackets uint64            `json:"tx_packets"`
	TxDropped uint64            `json:"tx_dropped"`
	Other     map[string]uint64 `json:"other,omitempty"`
}

var (
	reTestpmdANSI   = lazyRegexp("\x1b\\[[0-9;?]*[A-Za-z]")
	reTestpmdNIC    = lazyRegexp(`^#+ ?NIC statistics for port (\d+) ?#+$`)
	reTestpmdFwd    = lazyRegexp(`^-+ ?Forward statistics for port (\d+) ?-+$`)
	reTestpmdAcc    = lazyRegexp(`^\++ ?Accumulated forward statistics for all ports ?\++$`)
	reTestpmdStream = lazyRegexp(`^-+ ?Forward Stats for RX Port= ?(\d+)/Queue= ?(\d+) -> TX Port= ?(\d+)/Queue= ?(\d+) ?-+$`)
	reTestpmdMode   = lazyRegexp(`^(\S+) packet forwarding - ports=(\d+) - cores=(\d+) - streams=(\d+)`)
	// DPDK 1.x/2.x: "io packet forwarding - CRC stripping disabled -
	// packets/burst=16" and then "nb forwarding cores=1 - nb forwarding
	// ports=2".
	reTestpmdModeOld  = lazyRegexp(`^([a-z0-9_-]+) packet forwarding - CRC stripping`)
	reTestpmdNb       = lazyRegexp(`^nb forwarding cores=(\d+) - nb forwarding ports=(\d+)`)
	reTestpmdStatsReg = lazyRegexp(`^Stats reg +\d+ `)
	reTestpmdPktLen   = lazyRegexp(`^packet len=(\d+) `)
	reTestpmdRule     = lazyRegexp(`^(#{8,}|-{8,}|\+{8,})$`)
	reTestpmdFailure  = lazyRegexp(`(?i)(\berror\b|\bfail(ed)?\b|\bcannot\b|\binvalid\b|\bno probed\b|\bis larger than\b)`)
)

// testpmdBlock is the block being read.
type testpmdBlock struct {
	kind  byte // 'n' NIC, 'f' forward, 'a' accumulated, 's' stream
	line  int
	rule  string // the line that ends it ("" for a stream: a blank line or the next header)
	ports []int
	vals  map[string]uint64
	order []string
	tput  bool
}

// ParseTestpmd parses dpdk-testpmd's output: stdout and stderr together
// are fine, as are terminal escapes (--stats-period clears the screen),
// interactive prompts and mail pastes (collapsed whitespace, "> " quote
// marks). Every counter in a block must be an unsigned integer; a block
// cut off by the end of the input is an error. Output without any
// statistics is an error that quotes testpmd's own failure lines.
func ParseTestpmd(r io.Reader) (*Testpmd, error) {
	lr := newLineReader(r)
	t := &Testpmd{PortStats: []TestpmdPortStats{}, Forward: []TestpmdForward{}}
	var b *testpmdBlock
	for {
		raw, ok := lr.next()
		if !ok {
			break
		}
		ln := lr.line
		s := collapse(strings.ReplaceAll(reTestpmdANSI().ReplaceAllString(string(raw), ""), "\r", ""))
		s = strings.TrimPrefix(s, "testpmd> ")
		if b != nil {
			end := b.rule != "" && reTestpmdRule().MatchString(s) && s[0] == b.rule[0]
			if !end && b.kind == 's' && (s == "" || reTestpmdRule().MatchString(s) || isTestpmdHeader(s)) {
				end = true
			}
			if end {
				if err := t.add(b); err != nil {
					return nil, err
				}
				b = nil
				if s == "" || reTestpmdRule().MatchString(s) {
					continue
				}
			} else {
				if isTestpmdHeader(s) {
					return nil, errorf(ln, "testpmd: a new statistics block starts before the one at line %d ended", b.line)
				}
				if err := b.kv(s, ln); err != nil {
					return nil, err
				}
				continue
			}
		}
		if m := reTestpmdNIC().FindStringSubmatch(s); m != nil {
			b = newTestpmdBlock('n', ln, "#", m[1])
		} else if m := reTestpmdFwd().FindStringSubmatch(s); m != nil {
			b = newTestpmdBlock('f', ln, "-", m[1])
		} else if reTestpmdAcc().MatchString(s) {
			b = newTestpmdBlock('a', ln, "+")
		} else if m := reTestpmdStream().FindStringSubmatch(s); m != nil {
			b = newTestpmdBlock('s', ln, "", m[1:]...)
		} else if m := reTestpmdMode().FindStringSubmatch(s); m != nil {
			t.Mode = m[1]
			t.Ports, _ = strconv.Atoi(m[2])
			t.Cores, _ = strconv.Atoi(m[3])
			t.Streams, _ = strconv.Atoi(m[4])
		} else if m := reTestpmdModeOld().FindStringSubmatch(s); m != nil {
			t.Mode = m[1]
		} else if m := reTestpmdNb().FindStringSubmatch(s); m != nil {
			t.Cores, _ = strconv.Atoi(m[1])
			t.Ports, _ = strconv.Atoi(m[2])
		} else if m := reTestpmdPktLen().FindStringSubmatch(s); m != nil {
			t.PacketLen, _ = strconv.Atoi(m[1])
		} else if reTestpmdFailure().MatchString(s) {
			t.Errors = append(t.Errors, s)
		}
	}
	if lr.err != nil {
		return nil, lr.err
	}
	if b != nil {
		if b.kind != 's' {
			return nil, errorf(b.line, "testpmd: statistics block cut off by the end of the input")
		}
		if err := t.add(b); err != nil {
			return nil, err
		}
	}
	if len(t.PortStats) == 0 && len(t.Forward) == 0 && t.Accumulated == nil && len(t.StreamStats) == 0 {
		msg := "testpmd: no port or forward statistics found"
		if len(t.Errors) > 0 {
			said := strings.Join(t.Errors, "; ")
			if len(said) > 300 {
				said = said[:297] + "..."
			}
			msg += " (testpmd said: " + strconv.Quote(said) + ")"
		}
		return nil, errorf(0, "%s", msg)
	}
	return t, nil
}

func isTestpmdHeader(s string) bool {
	return reTestpmdNIC().MatchString(s) || reTestpmdFwd().MatchString(s) || reTestpmdAcc().MatchString(s) || reTestpmdStream().MatchString(s)
}

func newTestpmdBlock(kind byte, line int, rule string, ports ...string) *testpmdBlock {
	b := &testpmdBlock{kind: kind, line: line, rule: rule, vals: map[string]uint64{}}
	for _, p := range ports {
		n, _ := strconv.Atoi(p)
		b.ports = append(b.ports, n)
	}
	return b
}

// kv reads one line of "Key: value" pairs. A key is the text from the
// previous value to the colon ("RX-packets", "RX- bad IP checksum",
// "RX-bursts "); a value is an unsigned integer. Lines without a colon
// ("Throughput (since last show)", "CPU cycles/packet=...") carry no
// counter.
func (b *testpmdBlock) kv(s string, line int) error {
	if strings.HasPrefix(s, "Throughput") {
		b.tput = true
		return nil
	}
	rest, prefix := s, ""
	if m := reTestpmdStatsReg().FindString(s); m != "" {
		// "Stats reg  0 RX-packets: N    RX-errors: N    RX-bytes: N":
		// every counter of the line is the register's.
		prefix, rest = collapse(m)+" ", s[len(m):]
	}
	for {
		i := strings.IndexByte(rest, ':')
		if i < 0 {
			// Text after the last counter is a note ("RX-bursts : N [75%
			// of 32 pkts + ...]").
			return nil
		}
		key := prefix + strings.TrimSpace(rest[:i])
		rest = strings.TrimLeft(rest[i+1:], " ")
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if key == prefix || j == 0 {
			return errorf(line, "testpmd: counter %q has no number in %q", key, clip(s))
		}
		v, err := strconv.ParseUint(rest[:j], 10, 64)
		if err != nil {
			return errorf(line, "testpmd: counter %s: %v", key, err)
		}
		if old, dup := b.vals[key]; dup {
			// With queue statistics mapping, testpmd before DPDK 20.11
			// prints RX-errors twice (both stats.ierrors).
			if old == v {
				rest = rest[j:]
				continue
			}
			return errorf(line, "testpmd: counter %s twice in one block, %d and %d", key, old, v)
		}
		b.vals[key] = v
		b.order = append(b.order, key)
		rest = rest[j:]
	}
}

// take removes and returns a counter (ok false when absent).
func (b *testpmdBlock) take(key string) (uint64, bool) {
	v, ok := b.vals[key]
	delete(b.vals, key)
	return v, ok
}

func (b *testpmdBlock) other() map[string]uint64 {
	if len(b.vals) == 0 {
		return nil
	}
	return b.vals
}

func (t *Testpmd) add(b *testpmdBlock) error {
	need := func(keys ...string) error {
		for _, k := range keys {
			if _, ok := b.vals[k]; !ok {
				return errorf(b.line, "testpmd: statistics block without %s", k)
			}
		}
		return nil
	}
	u := func(k string) uint64 { v, _ := b.take(k); return v }
	switch b.kind {
	case 'n':
		if err := need("RX-packets", "TX-packets"); err != nil {
			return err
		}
		p := TestpmdPortStats{Line: b.line, Port: b.ports[0], RxPackets: u("RX-packets"), RxMissed: u("RX-missed"),
			RxBytes: u("RX-bytes"), RxErrors: u("RX-errors"), RxNombuf: u("RX-nombuf"), TxPackets: u("TX-packets"),
			TxErrors: u("TX-errors"), TxBytes: u("TX-bytes"), Throughput: b.tput,
			RxPPS: float64(u("Rx-pps")), RxBPS: float64(u("Rx-bps")), TxPPS: float64(u("Tx-pps")), TxBPS: float64(u("Tx-bps"))}
		p.Other = b.other()
		t.PortStats = append(t.PortStats, p)
	case 'f', 'a':
		if err := need("RX-packets", "TX-packets"); err != nil {
			return err
		}
		f := TestpmdForward{Line: b.line, Port: -1, RxPackets: u("RX-packets"), RxDropped: u("RX-dropped"), RxTotal: u("RX-total"),
			TxPackets: u("TX-packets"), TxDropped: u("TX-dropped"), TxTotal: u("TX-total")}
		f.Other = b.other()
		if b.kind == 'a' {
			t.Accumulated = &f
			return nil
		}
		f.Port = b.ports[0]
		t.Forward = append(t.Forward, f)
	case 's':
		if err := need("RX-packets", "TX-packets"); err != nil {
			return err
		}
		st := TestpmdStream{Line: b.line, RxPort: b.ports[0], RxQueue: b.ports[1], TxPort: b.ports[2], TxQueue: b.ports[3],
			RxPackets: u("RX-packets"), TxPackets: u("TX-packets"), TxDropped: u("TX-dropped")}
		st.Other = b.other()
		t.StreamStats = append(t.StreamStats, st)
	}
	return nil
}
