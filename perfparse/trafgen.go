package perfparse

import (
	"io"
	"strconv"
	"strings"
)

// Trafgen is the summary netsniff-ng's trafgen prints when it stops
// (SIGINT or count reached).
type Trafgen struct {
	// ScheduledPackets and ConfigBytes are the configuration summary
	// ("N packets to schedule", "N bytes in total").
	ScheduledPackets uint64 `json:"scheduled_packets"`
	ConfigBytes      uint64 `json:"config_bytes"`
	// Packets and Bytes are "N packets outgoing" and "N bytes outgoing".
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
	// CPUs are the per-CPU lines "S sec, U usec on CPUn (N packets)".
	CPUs []TrafgenCPU `json:"cpus"`
	// Complete is true when the outgoing totals were printed (trafgen
	// reached its summary).
	Complete bool `json:"complete"`
	// Messages are other lines trafgen printed (warnings, errors such as
	// "Flushing TX_RING failed: ..."), as printed.
	Messages []string `json:"messages,omitempty"`
}

// TrafgenCPU is one worker's time and packet count.
type TrafgenCPU struct {
	CPU     int     `json:"cpu"`
	Seconds float64 `json:"seconds"`
	Packets uint64  `json:"packets"`
}

// PPS is Packets divided by the longest worker time (0 when unknown).
func (t *Trafgen) PPS() float64 {
	var s float64
	for _, c := range t.CPUs {
		s = max(s, c.Seconds)
	}
	if s == 0 {
		return 0
	}
	return float64(t.Packets) / s
}

var (
	reTrafgenCount = lazyRegexp(`^(\d+) (packets to schedule|bytes in total|packets outgoing|bytes outgoing)$`)
	reTrafgenCPU   = lazyRegexp(`^(\d+) sec, (\d+) usec on CPU(\d+) \((\d+) packets\)$`)
)

// ParseTrafgen parses trafgen's printed output (stdout and stderr
// together are fine; carriage returns and unrelated lines are skipped).
func ParseTrafgen(r io.Reader) (*Trafgen, error) {
	lines, err := readLines(r)
	if err != nil {
		return nil, err
	}
	t := &Trafgen{CPUs: []TrafgenCPU{}}
	seen := false
	for i, l := range lines {
		ln := i + 1
		// A terminal shows "\r" overwritten progress; keep the last part.
		if j := strings.LastIndexByte(strings.TrimRight(l, "\r "), '\r'); j >= 0 {
			l = l[j+1:]
		}
		s := collapse(l)
		if m := reTrafgenCount().FindStringSubmatch(s); m != nil {
			n, err := strconv.ParseUint(m[1], 10, 64)
			if err != nil {
				return nil, errorf(ln, "trafgen: %q: %v", s, err)
			}
			switch m[2] {
			case "packets to schedule":
				t.ScheduledPackets = n
			case "bytes in total":
				t.ConfigBytes = n
			case "packets outgoing":
				t.Packets, t.Complete = n, true
			case "bytes outgoing":
				t.Bytes = n
			}
			seen = true
			continue
		}
		if m := reTrafgenCPU().FindStringSubmatch(s); m != nil {
			sec, _ := strconv.ParseUint(m[1], 10, 64)
			usec, err1 := strconv.ParseUint(m[2], 10, 64)
			cpu, err2 := strconv.Atoi(m[3])
			n, err3 := strconv.ParseUint(m[4], 10, 64)
			if err1 != nil || err2 != nil || err3 != nil {
				return nil, errorf(ln, "trafgen: bad per-CPU line %q", clip(s))
			}
			t.CPUs = append(t.CPUs, TrafgenCPU{CPU: cpu, Seconds: scale(float64(sec*1000000+usec), -6), Packets: n})
			seen = true
			continue
		}
		if s != "" && s != "Running! Hang up with ^C!" {
			t.Messages = append(t.Messages, s)
		}
	}
	if !seen {
		return nil, errorf(0, "trafgen: no summary found (expected \"N packets outgoing\")")
	}
	return t, nil
}
