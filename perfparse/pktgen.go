package perfparse

import (
	"io"
	"strconv"
	"strings"
)

// PktgenDevice is /proc/net/pktgen/<dev>: the parameters, the current
// counters and the result of the last command or run.
type PktgenDevice struct {
	// Device is the interface name (Params "ifname"), e.g. "tap0" or "eth0@1".
	Device string `json:"device,omitempty"`
	// Params holds every "key: value" of the Params section with the
	// kernel's names ("count", "min_pkt_size", "dst_min", ...). Values are
	// as printed ("" when the kernel printed nothing).
	Params map[string]string `json:"params"`
	// Flags is the Params "Flags:" list (e.g. NO_TIMESTAMP).
	Flags []string `json:"flags,omitempty"`
	// Count is Params "count": packets to send, 0 = until stopped.
	Count uint64 `json:"count"`
	// MinPktSize and MaxPktSize are the packet sizes in bytes (without FCS).
	MinPktSize int `json:"min_pkt_size_bytes"`
	MaxPktSize int `json:"max_pkt_size_bytes"`
	// Imix are the packet sizes of IMIX mode, nil otherwise.
	Imix []PktgenImixEntry `json:"imix,omitempty"`
	// Current is the Current section, nil when absent.
	Current *PktgenCurrent `json:"current,omitempty"`
	// Result is the "Result:" line(s), nil when absent.
	Result *PktgenResult `json:"result,omitempty"`

	countsLine int            // the imix_size_counts line, for errors
	lines      map[string]int // "section.key" → line, for errors
}

// PktgenCurrent is the Current section of a pktgen device file.
type PktgenCurrent struct {
	PacketsSoFar uint64 `json:"pkts_sofar"`
	Errors       uint64 `json:"errors"`
	// StartedUsec, StoppedUsec and IdleUsec are as printed (µs; started and
	// stopped are timestamps, idle a duration).
	StartedUsec uint64 `json:"started_usec"`
	StoppedUsec uint64 `json:"stopped_usec"`
	IdleUsec    uint64 `json:"idle_usec"`
	SeqNum      uint64 `json:"seq_num"`
	// Fields holds every "key: value" of the section as printed.
	Fields map[string]string `json:"fields"`
}

// PktgenResult is the "Result:" of a pktgen device file. After a run it is
// "OK: T(cX+dY) usec, N (Sbyte,Ffrags)" followed by
// "Npps NMb/sec (Nbps) errors: N"; after a configuration write it is
// "OK: key=value" or an error text such as `No such parameter "x"`; before
// any run it is "Idle".
type PktgenResult struct {
	// Status is "ok", "idle" (never run), "running" ("Starting": the run
	// has not ended) or "error" (any other text, e.g. "Error starting").
	Status string `json:"status"`
	// OK is Status == "ok".
	OK bool `json:"ok"`
	// Msg is the result text as printed (joined to one line).
	Msg string `json:"msg"`
	// Run is true when the result is a run summary (the fields below).
	Run bool `json:"run"`
	// Usec is the total run time T in µs, CPUUsec the busy part (cX) and
	// IdleUsec the idle part (dY).
	Usec     uint64  `json:"usec"`
	CPUUsec  uint64  `json:"cpu_usec"`
	IdleUsec uint64  `json:"idle_usec"`
	Seconds  float64 `json:"seconds"`
	// Packets is the number of packets sent.
	Packets uint64 `json:"packets"`
	// PktSize is the packet size in bytes ("60byte"); in IMIX mode the
	// size of the last packet built.
	PktSize int `json:"pkt_size_bytes"`
	// Bytes is Packets × PktSize; in IMIX mode (Imix) the sum of size ×
	// count over the device's imix_size_counts, when those add up to
	// Packets, else 0 with BytesUnknown set. Imix is also set, with
	// BytesUnknown, for a Result whose bps is not pps × 8 × PktSize, which
	// only IMIX mode prints (e.g. a sample script's Result lines).
	Bytes        uint64 `json:"bytes"`
	Imix         bool   `json:"imix,omitempty"`
	BytesUnknown bool   `json:"bytes_unknown,omitempty"`
	// Frags is the skb's frag count; -1 means pktgen never built an skb
	// (e.g. the device had no carrier and nothing was sent).
	Frags int `json:"frags"`
	// PPS is packets per second and BitsPerSec bits per second (the kernel's
	// "(Nbps)" value, counting pkt_size × 8 per packet; in IMIX mode, from
	// 5.15 on, the imix_size_counts' bytes × 8).
	PPS        float64 `json:"pps"`
	BitsPerSec float64 `json:"bits_per_sec"`
	// MbPerSec is the kernel's rounded "NMb/sec" figure (Mbit/s), as printed.
	MbPerSec uint64 `json:"mb_per_sec"`
	// Errors is the "errors: N" count of the result line.
	Errors uint64 `json:"errors"`
}

var (
	rePktgenRun  = lazyRegexp(`^OK: (\d+)\(c(\d+)\+d(\d+)\) usec, (\d+) \((\d+)byte,(-?\d+)frags\)\s*(?:(\d+)pps (\d+)Mb/sec \((\d+)bps\) errors: (\d+))?\s*$`)
	rePktgenRate = lazyRegexp(`^(\d+)pps (\d+)Mb/sec \((\d+)bps\) errors: (\d+)$`)
)

// ParsePktgen parses the contents of /proc/net/pktgen/<dev>. Whitespace
// may be collapsed and lines may carry mail quote marks.
func ParsePktgen(r io.Reader) (*PktgenDevice, error) {
	lines, err := readLines(r)
	if err != nil {
		return nil, err
	}
	d, rest, err := parsePktgenLines(lines, 0)
	if err != nil {
		return nil, err
	}
	for i := rest; i < len(lines); i++ {
		if t := strings.TrimSpace(lines[i]); t != "" && !cutMark([]byte(t)) {
			return nil, errorf(i+1, "unexpected text after the pktgen Result: %q", clip(lines[i]))
		}
	}
	return d, nil
}

// parsePktgenLines parses one device file starting at lines[start] and
// returns the index of the first line after its Result.
func parsePktgenLines(lines []string, start int) (*PktgenDevice, int, error) {
	d := &PktgenDevice{Params: map[string]string{}, lines: map[string]int{}}
	section := ""
	seen := false
	i := start
	for ; i < len(lines); i++ {
		ln := i + 1
		s := strings.TrimSpace(lines[i])
		if s == "" || cutMark([]byte(s)) {
			continue // blank, or "..." where a paste left lines out
		}
		switch {
		case strings.HasPrefix(s, "Params:"):
			section, seen = "params", true
			s = strings.TrimSpace(strings.TrimPrefix(s, "Params:"))
			if strings.HasPrefix(s, "count=") {
				d.addPg24Params(s, ln)
				continue
			}
			if rest, ok := strings.CutPrefix(s, "count "); ok {
				f := strings.Fields(rest)
				if len(f) == 0 {
					return nil, 0, errorf(ln, "pktgen Params: count has no value")
				}
				d.Params["count"], d.lines["params.count"] = f[0], ln
				s = strings.Join(f[1:], " ")
			}
		case s == "Current:" || strings.HasPrefix(s, "Current: "):
			section, seen = "current", true
			d.Current = &PktgenCurrent{Fields: map[string]string{}}
			s = strings.TrimSpace(strings.TrimPrefix(s, "Current:"))
		case strings.HasPrefix(s, "Result:"):
			res, last, err := pktgenResultAt(lines, i)
			if err != nil {
				return nil, 0, err
			}
			d.Result = res
			return d.finish(last + 1)
		default:
			if !seen {
				return nil, 0, errorf(ln, "not a pktgen device file: expected \"Params:\", got %q", clip(s))
			}
		}
		if s == "" {
			continue
		}
		if section == "params" {
			if rest, ok := strings.CutPrefix(s, "Flags:"); ok {
				d.Flags = strings.Fields(rest)
				continue
			}
		}
		if err := d.addFields(section, s, ln); err != nil {
			return nil, 0, err
		}
	}
	if !seen {
		return nil, 0, errorf(0, "empty input: expected a /proc/net/pktgen device file")
	}
	return d.finish(i)
}

// addPg24Params reads the one Params line of Linux 2.4's /proc/net/pg
// (pktgen before its per-device files): "count=N pkt_size=N frags N ipg
// N multiskb N odev "eth0" dst A dstmac M", into Params by those names,
// with the pkt_size as min/max_pkt_size and odev as ifname.
func (d *PktgenDevice) addPg24Params(s string, ln int) {
	f := strings.Fields(s)
	for i := 0; i < len(f); i++ {
		k, v, ok := strings.Cut(f[i], "=")
		if !ok && i+1 < len(f) {
			v, i = f[i+1], i+1
		}
		v = strings.Trim(v, `"`)
		d.Params[k], d.lines["params."+k] = v, ln
	}
	for k, old := range map[string]string{"ifname": "odev", "min_pkt_size": "pkt_size", "max_pkt_size": "pkt_size"} {
		if v, ok := d.Params[old]; ok {
			d.Params[k], d.lines["params."+k] = v, ln
		}
	}
}

// addFields stores the "key: value" pairs of line ln of a section,
// remembering the line of each for later errors.
func (d *PktgenDevice) addFields(section, s string, ln int) error {
	kv, err := pktgenFields(s, ln)
	if err != nil {
		return err
	}
	dst := d.Params
	if section == "current" {
		dst = d.Current.Fields
	}
	for _, p := range kv {
		if err := d.checkImixField(p[0], p[1], ln); err != nil {
			return err
		}
		dst[p[0]] = p[1]
		d.lines[section+"."+p[0]] = ln
	}
	return nil
}

func (d *PktgenDevice) finish(next int) (*PktgenDevice, int, error) {
	var err error
	d.Device = d.Params["ifname"]
	if d.Count, err = optUint(d.Params, "count", d.lines["params.count"]); err != nil {
		return nil, 0, err
	}
	if v, ok := d.Params["min_pkt_size"]; ok {
		d.MinPktSize, _ = strconv.Atoi(v)
	}
	if v, ok := d.Params["max_pkt_size"]; ok {
		d.MaxPktSize, _ = strconv.Atoi(v)
	}
	if c := d.Current; c != nil {
		f := c.Fields
		for _, x := range []struct {
			key string
			dst *uint64
		}{
			{"pkts-sofar", &c.PacketsSoFar}, {"errors", &c.Errors}, {"started", &c.StartedUsec},
			{"stopped", &c.StoppedUsec}, {"idle", &c.IdleUsec}, {"seq_num", &c.SeqNum},
		} {
			v, ok := f[x.key]
			if !ok {
				continue
			}
			n, err := strconv.ParseUint(strings.TrimSuffix(v, "us"), 10, 64)
			if err != nil {
				return nil, 0, errorf(d.lines["current."+x.key], "pktgen Current %s: %q is not a count", x.key, v)
			}
			*x.dst = n
		}
	}
	if err := d.parseImix(); err != nil {
		return nil, 0, err
	}
	d.setImixBytes()
	return d, next, nil
}

func optUint(m map[string]string, k string, ln int) (uint64, error) {
	v, ok := m[k]
	if !ok || v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, errorf(ln, "pktgen %s: %q is not a count", k, v)
	}
	return n, nil
}

// pktgenFields splits `key: value  key2: value2 key3:  ` into pairs. A
// key is a token ending in ':' whose name is a word; its value is the next
// token unless that is another key (then it is empty).
func pktgenFields(s string, ln int) ([][2]string, error) {
	f := strings.Fields(s)
	var out [][2]string
	for j := 0; j < len(f); j++ {
		k, ok := pktgenKey(f[j])
		if !ok {
			// Lines like "flows: 0 flowlen: 0" are covered; a stray value
			// after a complete pair (e.g. "imix_weights: 40,7 576,4")
			// extends the previous value.
			if len(out) == 0 {
				return nil, errorf(ln, "pktgen: expected \"key: value\", got %q", clip(s))
			}
			out[len(out)-1][1] = strings.TrimSpace(out[len(out)-1][1] + " " + f[j])
			continue
		}
		v := ""
		if j+1 < len(f) {
			if _, isKey := pktgenKey(f[j+1]); !isKey {
				v = f[j+1]
				j++
			}
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

func pktgenKey(tok string) (string, bool) {
	k, ok := strings.CutSuffix(tok, ":")
	if !ok || k == "" {
		return "", false
	}
	for _, c := range k {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return "", false
		}
	}
	if k[0] >= '0' && k[0] <= '9' {
		return "", false
	}
	return k, true
}

func parsePktgenResult(msg string, ln int) (*PktgenResult, error) {
	r := &PktgenResult{Msg: msg}
	switch {
	case msg == "Idle":
		r.Status = "idle"
		return r, nil
	case msg == "Starting":
		// set when the run starts; replaced by the summary when it ends
		r.Status = "running"
		return r, nil
	case strings.HasPrefix(msg, "OK:") || msg == "OK":
		r.Status, r.OK = "ok", true
	default:
		r.Status = "error"
		return r, nil
	}
	if r24, ok, err := parsePg24Result(r, msg, ln); ok || err != nil {
		return r24, err
	}
	m := rePktgenRun().FindStringSubmatch(msg)
	if m == nil {
		if strings.Contains(msg, "usec,") {
			return nil, errorf(ln, "pktgen Result: cannot read run summary %q (want \"OK: T(cX+dY) usec, N (Sbyte,Ffrags)\")", clip(msg))
		}
		return r, nil // e.g. "OK: count=100000" after a configuration write
	}
	r.Run = true
	var err error
	u := func(s string) uint64 {
		if err != nil || s == "" {
			return 0
		}
		var n uint64
		n, err = strconv.ParseUint(s, 10, 64)
		return n
	}
	r.Usec, r.CPUUsec, r.IdleUsec, r.Packets = u(m[1]), u(m[2]), u(m[3]), u(m[4])
	ps, _ := strconv.Atoi(m[5])
	fr, _ := strconv.Atoi(m[6])
	r.PktSize, r.Frags = ps, fr
	if m[7] == "" {
		return nil, errorf(ln, "pktgen Result: the \"Npps NMb/sec (Nbps) errors: N\" line is missing")
	}
	r.PPS, r.MbPerSec, r.BitsPerSec, r.Errors = float64(u(m[7])), u(m[8]), float64(u(m[9])), u(m[10])
	if err != nil {
		return nil, errorf(ln, "pktgen Result: %v", err)
	}
	r.Seconds = scale(float64(r.Usec), -6)
	r.Bytes = r.Packets * uint64(max(ps, 0))
	r.markImix()
	return r, nil
}

// rePg24Run is the run summary of Linux 2.4's pktgen (/proc/net/pg):
// "OK: T(cX+dY) usec, N (Sbyte,Ffrags) Npps NMB/sec" on one line, the
// rate in 1024-based bytes per second with a K or M prefix, no bps and no
// error count (the frags field is absent before 2002).
var rePg24Run = lazyRegexp(`^OK: (\d+)\(c(\d+)\+d(\d+)\) usec, (\d+) \((\d+)byte(?:,(-?\d+)frags)?\) (\d+)pps (\d+)([KM])B/sec$`)

// parsePg24Result reads a 2.4 run summary; ok is false for any other
// result. Its BitsPerSec is pps × 8 × size, as later kernels compute it
// (2.4 printed only the rounded byte rate).
func parsePg24Result(r *PktgenResult, msg string, ln int) (*PktgenResult, bool, error) {
	m := rePg24Run().FindStringSubmatch(msg)
	if m == nil {
		return nil, false, nil
	}
	var n [8]uint64
	for i, x := range []string{m[1], m[2], m[3], m[4], m[5], m[6], m[7]} {
		v, err := strconv.ParseUint(x, 10, 64)
		if err != nil && x != "" {
			return nil, true, errorf(ln, "pktgen Result: %v", err)
		}
		n[i] = v
	}
	r.Run, r.Usec, r.CPUUsec, r.IdleUsec, r.Packets = true, n[0], n[1], n[2], n[3]
	r.PktSize, r.Frags, r.PPS = int(n[4]), int(n[5]), float64(n[6])
	r.Seconds, r.Bytes = scale(float64(r.Usec), -6), r.Packets*n[4]
	r.BitsPerSec = r.PPS * 8 * float64(r.PktSize)
	return r, true, nil
}

// markImix marks a run of IMIX mode seen from its Result lines alone (the
// samples/pktgen scripts print only those): the kernel computes bps as pps
// × 8 × the one packet size, except in IMIX mode (5.15+), where it counts
// the bytes of each size; so there the bytes are unknown, not Packets ×
// the last packet's size.
func (r *PktgenResult) markImix() {
	if r.BitsPerSec == r.PPS*8*float64(max(r.PktSize, 0)) {
		return
	}
	r.Imix, r.Bytes, r.BytesUnknown = true, 0, true
}

// collapse replaces runs of blanks with one space.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip shortens s for error messages.
func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// pktgenResultAt parses the "Result:" line lines[i] with the rate line
// that follows an OK run result on its own line, and returns the index
// of the last line it took.
func pktgenResultAt(lines []string, i int) (*PktgenResult, int, error) {
	ln := i + 1
	msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i]), "Result:"))
	if rePktgenRun().MatchString(msg) && !strings.Contains(msg, "pps") && i+1 < len(lines) {
		if n := strings.TrimSpace(lines[i+1]); rePktgenRate().MatchString(collapse(n)) {
			msg += " " + n
			i++
		}
	}
	res, err := parsePktgenResult(collapse(msg), ln)
	return res, i, err
}
