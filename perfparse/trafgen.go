package perfparse

import (
	"io"
	"strconv"
	"strings"
)

// Trafgen is the summary netsniff-ng's trafgen prints when it stops
// (SIGINT or count reached). Three layouts are read (netsniff-ng's
// trafgen.c): 0.5.8 to 0.6.9 print per-CPU lines with packet counts;
// the multi-process trafgen of early 2013 (before 0.5.8) prints them
// without counts; the one-process trafgen up to 0.5.7 prints "N frames
// outgoing" and one "S sec, U usec in total" line.
type Trafgen struct {
	// ScheduledPackets and ConfigBytes are the configuration summary
	// ("N packets to schedule", "N bytes in total").
	ScheduledPackets uint64 `json:"scheduled_packets"`
	ConfigBytes      uint64 `json:"config_bytes"`
	// Packets and Bytes are "N packets outgoing" ("N frames outgoing"
	// up to 0.5.7) and "N bytes outgoing".
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
	// CPUs are the per-CPU lines "S sec, U usec on CPUn (N packets)".
	CPUs []TrafgenCPU `json:"cpus"`
	// TotalS is the "S sec, U usec in total" of trafgen up to 0.5.7,
	// which ran one process and printed no per-CPU lines.
	TotalS *float64 `json:"total_s,omitempty"`
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
	// Packets is nil where trafgen did not print it (early 2013,
	// "S sec, U usec on CPUn" without "(N packets)").
	Packets *uint64 `json:"packets,omitempty"`
}

// PPS is Packets divided by the longest worker time, or by TotalS (0
// when neither is known).
func (t *Trafgen) PPS() float64 {
	var s float64
	if t.TotalS != nil {
		s = *t.TotalS
	}
	for _, c := range t.CPUs {
		s = max(s, c.Seconds)
	}
	if s == 0 {
		return 0
	}
	return float64(t.Packets) / s
}

var (
	reTrafgenCount = lazyRegexp(`^(\d+) (packets to schedule|bytes in total|packets outgoing|frames outgoing|bytes outgoing)$`)
	reTrafgenCPU   = lazyRegexp(`^(\d+) sec, (\d+) usec (?:on CPU(\d+)(?: \((\d+) packets\))?|in total)$`)
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
		// A terminal shows "\r" overwritten progress; keep the last part.
		if j := strings.LastIndexByte(strings.TrimRight(l, "\r "), '\r'); j >= 0 {
			l = l[j+1:]
		}
		s := collapse(l)
		ok, err := t.addLine(s, i+1)
		if err != nil {
			return nil, err
		}
		seen = seen || ok
		if !ok && s != "" && s != "Running! Hang up with ^C!" {
			t.Messages = append(t.Messages, s)
		}
	}
	if !seen {
		return nil, errorf(0, "trafgen: no summary found (expected \"N packets outgoing\")")
	}
	return t, nil
}

// addLine reads one summary line into t; ok is false for other lines.
func (t *Trafgen) addLine(s string, ln int) (ok bool, err error) {
	if m := reTrafgenCount().FindStringSubmatch(s); m != nil {
		n, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			return false, errorf(ln, "trafgen: %q: %v", s, err)
		}
		switch m[2] {
		case "packets to schedule":
			t.ScheduledPackets = n
		case "bytes in total":
			t.ConfigBytes = n
		case "packets outgoing", "frames outgoing":
			t.Packets, t.Complete = n, true
		case "bytes outgoing":
			t.Bytes = n
		}
		return true, nil
	}
	m := reTrafgenCPU().FindStringSubmatch(s)
	if m == nil {
		return false, nil
	}
	return true, t.addTime(m, s, ln)
}

// addTime reads "S sec, U usec on CPUn [(N packets)]" or "S sec, U usec
// in total" (m: S, U, n, N; n empty for the total).
func (t *Trafgen) addTime(m []string, s string, ln int) error {
	sec, err0 := strconv.ParseUint(m[1], 10, 64)
	usec, err1 := strconv.ParseUint(m[2], 10, 64)
	if err0 != nil || err1 != nil || usec >= 1000000 {
		return errorf(ln, "trafgen: bad time in %q (want \"S sec, U usec\" with U < 1000000)", clip(s))
	}
	secs := scale(float64(sec*1000000+usec), -6)
	if m[3] == "" {
		t.TotalS = &secs
		return nil
	}
	c := TrafgenCPU{Seconds: secs}
	c.CPU, err0 = strconv.Atoi(m[3])
	if m[4] != "" {
		n, err := strconv.ParseUint(m[4], 10, 64)
		c.Packets, err1 = &n, err
	}
	if err0 != nil || err1 != nil {
		return errorf(ln, "trafgen: bad per-CPU line %q", clip(s))
	}
	t.CPUs = append(t.CPUs, c)
	return nil
}
