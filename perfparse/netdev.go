package perfparse

import (
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// NetdevStats are one interface's counters. Counters keeps every counter
// under its original name (the sysfs file name, or "rx_bytes",
// "tx_colls", ... for /proc/net/dev columns); the fields repeat the common
// ones.
type NetdevStats struct {
	Device    string            `json:"device,omitempty"`
	RxPackets uint64            `json:"rx_packets"`
	TxPackets uint64            `json:"tx_packets"`
	RxBytes   uint64            `json:"rx_bytes"`
	TxBytes   uint64            `json:"tx_bytes"`
	RxDropped uint64            `json:"rx_dropped"`
	TxDropped uint64            `json:"tx_dropped"`
	RxErrors  uint64            `json:"rx_errors"`
	TxErrors  uint64            `json:"tx_errors"`
	Counters  map[string]uint64 `json:"counters"`
}

func (s *NetdevStats) fill() {
	c := s.Counters
	s.RxPackets, s.TxPackets = c["rx_packets"], c["tx_packets"]
	s.RxBytes, s.TxBytes = c["rx_bytes"], c["tx_bytes"]
	s.RxDropped, s.TxDropped = c["rx_dropped"], c["tx_dropped"]
	s.RxErrors, s.TxErrors = c["rx_errors"], c["tx_errors"]
}

// ParseNetdevStats reads a /sys/class/net/<dev>/statistics directory given
// as an fs.FS (os.DirFS(dir), or fstest.MapFS in tests): one counter per
// file. Device is left empty for the caller to set.
func ParseNetdevStats(fsys fs.FS) (*NetdevStats, error) {
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read netdev statistics: %w", err)
	}
	s := &NetdevStats{Counters: map[string]uint64{}}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("read netdev statistics: %w", err)
		}
		v := strings.TrimSpace(string(b))
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, &SyntaxError{File: e.Name(), Line: 1, Msg: fmt.Sprintf("counter %q is not a count", clip(v))}
		}
		s.Counters[e.Name()] = n
	}
	if len(s.Counters) == 0 {
		return nil, &SyntaxError{Msg: "no counter files in the statistics directory (want e.g. rx_packets, tx_packets)"}
	}
	s.fill()
	return s, nil
}

// procNetDevNames maps /proc/net/dev column names to sysfs names.
var procNetDevNames = map[string]string{"errs": "errors", "drop": "dropped", "colls": "collisions",
	"frame": "frame_errors", "fifo": "fifo_errors", "carrier": "carrier_errors"}

// ParseProcNetDev parses /proc/net/dev into one NetdevStats per interface,
// sorted by device name. Counters are named "rx_<column>"/"tx_<column>"
// with the column names of the header, except that errs, drop, colls,
// fifo, frame and carrier get their sysfs names (rx_errors, rx_dropped,
// collisions, rx_fifo_errors, rx_frame_errors, tx_carrier_errors).
//
// It also reads the same counters as ip -s link (-s -s, ip -s addr) and
// ip -j -s link print them, under their sysfs names (rx_missed_errors,
// tx_carrier_errors, carrier_changes, ...), and refuses ethtool -S, whose
// counters are each driver's own.
func ParseProcNetDev(r io.Reader) ([]NetdevStats, error) {
	lines, err := readLines(r)
	if err != nil {
		return nil, err
	}
	if err := checkEthtoolStats(lines); err != nil {
		return nil, err
	}
	if t := strings.TrimSpace(strings.Join(lines, "\n")); strings.HasPrefix(t, "[") && strings.Contains(t, `"ifname"`) {
		return parseIPLinkJSON([]byte(t))
	}
	if isIPLinkText(lines) {
		return parseIPLinkText(lines)
	}
	var rx, tx []string
	var out []NetdevStats
	for i, l := range lines {
		ln := i + 1
		s := strings.TrimSpace(l)
		if s == "" || strings.HasPrefix(s, "Inter-") {
			continue
		}
		if strings.HasPrefix(s, "face") {
			parts := strings.Split(s, "|")
			if len(parts) != 3 {
				return nil, errorf(ln, "/proc/net/dev: header %q does not have 3 |-separated parts", clip(s))
			}
			rx, tx = strings.Fields(parts[1]), strings.Fields(parts[2])
			continue
		}
		dev, rest, ok := strings.Cut(s, ":")
		if !ok {
			return nil, errorf(ln, "/proc/net/dev: expected \"dev: counters\", got %q", clip(s))
		}
		if rx == nil {
			rx = strings.Fields("bytes packets errs drop fifo frame compressed multicast")
			tx = strings.Fields("bytes packets errs drop fifo colls carrier compressed")
		}
		f := strings.Fields(rest)
		if len(f) != len(rx)+len(tx) {
			return nil, errorf(ln, "/proc/net/dev: %s has %d counters, the header names %d", strings.TrimSpace(dev), len(f), len(rx)+len(tx))
		}
		st := NetdevStats{Device: strings.TrimSpace(dev), Counters: map[string]uint64{}}
		for j, v := range f {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, errorf(ln, "/proc/net/dev: %s counter %q is not a count", st.Device, clip(v))
			}
			dir, col := "rx_", ""
			if j < len(rx) {
				col = rx[j]
			} else {
				dir, col = "tx_", tx[j-len(rx)]
			}
			name := dir + col
			if s, ok := procNetDevNames[col]; ok {
				name = dir + s
				if col == "colls" {
					name = s
				}
			}
			st.Counters[name] = n
		}
		st.fill()
		out = append(out, st)
	}
	if len(out) == 0 {
		return nil, errorf(0, "/proc/net/dev: no interfaces in the input")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Device < out[j].Device })
	return out, nil
}

// NewNetdevStats builds a NetdevStats from counters already read (e.g. the
// guest agent's stats event), filling the typed fields from the sysfs
// names. The map is used as is.
func NewNetdevStats(device string, counters map[string]uint64) *NetdevStats {
	if counters == nil {
		counters = map[string]uint64{}
	}
	s := &NetdevStats{Device: device, Counters: counters}
	s.fill()
	return s
}
