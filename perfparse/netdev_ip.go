package perfparse

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// ip -s link prints the same counters as /proc/net/dev under its own
// column words, in two generations of iproute2, before and after Jakub
// Kicinski's "ip: promote missed packets to the -s row" (iproute2-next,
// September 2020):
//
//	RX: bytes  packets  errors  dropped overrun mcast          (before)
//	RX:  bytes packets errors dropped  missed   mcast          (after)
//	RX errors: length   crc     frame   fifo    missed         (-s -s, before)
//	RX errors:  length    crc   frame    fifo overrun          (-s -s, after)
//	TX: bytes  packets  errors  dropped carrier collsns
//	TX errors: aborted  fifo   window heartbeat transns
//
// Each word names one counter whichever line it is on (overrun is always
// rx_over_errors, missed rx_missed_errors), so the words are mapped, not
// the positions.

// ipStatsNames maps ip -s link's column words to sysfs names, per
// direction; a word not listed becomes "rx_WORD"/"tx_WORD".
var ipStatsNames = map[string]string{
	"overrun": "over_errors", "missed": "missed_errors", "mcast": "multicast",
	"length": "length_errors", "crc": "crc_errors", "frame": "frame_errors", "fifo": "fifo_errors",
	"carrier": "carrier_errors", "collsns": "collisions", "aborted": "aborted_errors",
	"window": "window_errors", "heartbeat": "heartbeat_errors", "heartbt": "heartbeat_errors",
	"transns": "carrier_changes", "otherhost": "otherhost_dropped",
}

// ipJSONNames maps ip -j -s link's stats keys that differ from the sysfs
// names after the direction prefix.
var ipJSONNames = map[string]string{"otherhost": "otherhost_dropped"}

// unprefixed are the sysfs counters without an rx_/tx_ prefix.
var unprefixed = map[string]bool{"multicast": true, "collisions": true, "carrier_changes": true}

func statName(dir, name string) string {
	if unprefixed[name] {
		return name
	}
	return dir + "_" + name
}

// reIPLinkDevice is ip link's device line: "3: vnbp0@if2: <BROADCAST,...".
var reIPLinkDevice = lazyRegexp(`^\d+:\s+([^:@\s]+)(?:@\S*)?:\s+<`)

// isIPLinkText reports whether lines are ip -s link's text output.
func isIPLinkText(lines []string) bool {
	dev := false
	for _, l := range lines {
		s := strings.TrimSpace(l)
		if reIPLinkDevice().MatchString(s) {
			dev = true
		} else if dev && (strings.HasPrefix(s, "RX:") || strings.HasPrefix(s, "TX:")) {
			return true
		}
	}
	return false
}

// parseIPLinkText reads ip -s link (or -s -s, or ip -s addr) text output.
func parseIPLinkText(lines []string) ([]NetdevStats, error) {
	var out []NetdevStats
	var cur *NetdevStats
	var header []string // the column words of the line before, with direction
	dir, vf := "", false
	for i, l := range lines {
		ln, s := i+1, strings.TrimSpace(l)
		if m := reIPLinkDevice().FindStringSubmatch(s); m != nil {
			out = append(out, NetdevStats{Device: m[1], Counters: map[string]uint64{}})
			cur, header, vf = &out[len(out)-1], nil, false
			continue
		}
		if cur == nil || s == "" {
			continue
		}
		if strings.HasPrefix(s, "vf ") {
			vf = true // a VF's own RX:/TX: lines follow: not the device's
		}
		if h, rest, ok := ipStatsHeader(s); ok {
			dir, header = h, strings.Fields(rest)
			continue
		}
		if header == nil {
			continue
		}
		f := strings.Fields(s)
		if len(f) != len(header) {
			return nil, errorf(ln, "ip -s link: %s: %d values under the %d column names %q", cur.Device, len(f), len(header), strings.Join(header, " "))
		}
		for j, v := range f {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, errorf(ln, "ip -s link: %s: counter %s %q is not a count; give ip -s link without -h (-human), which rounds the counters", cur.Device, header[j], clip(v))
			}
			name := header[j]
			if sysfs, ok := ipStatsNames[name]; ok {
				name = sysfs
			}
			if !vf {
				cur.Counters[statName(dir, name)] = n
			}
		}
		header = nil
	}
	return finishNetdev(out, "ip -s link")
}

// ipStatsHeader cuts an "RX:", "TX:", "RX errors:" or "TX errors:" line
// into the direction and the column words.
func ipStatsHeader(s string) (dir, rest string, ok bool) {
	for _, p := range []struct{ prefix, dir string }{{"RX errors:", "rx"}, {"TX errors:", "tx"}, {"RX:", "rx"}, {"TX:", "tx"}} {
		if rest, ok := strings.CutPrefix(s, p.prefix); ok {
			return p.dir, rest, true
		}
	}
	return "", "", false
}

// parseIPLinkJSON reads ip -j -s link: an array of links whose "stats64"
// (or "stats"; "stats644" in iproute2 4.14-4.15) object holds "rx" and
// "tx" counters.
func parseIPLinkJSON(data []byte) ([]NetdevStats, error) {
	var links []map[string]json.RawMessage
	if err := json.Unmarshal(data, &links); err != nil {
		return nil, errorf(0, "ip -j -s link: %v", err)
	}
	var out []NetdevStats
	for _, link := range links {
		var name string
		if err := json.Unmarshal(link["ifname"], &name); err != nil || name == "" {
			return nil, errorf(0, "ip -j -s link: a link without \"ifname\"")
		}
		raw := link["stats64"]
		for _, k := range []string{"stats", "stats644"} {
			if raw == nil {
				raw = link[k]
			}
		}
		if raw == nil {
			return nil, errorf(0, "ip -j link: %s has no \"stats64\" object; give ip -j -s link (-s prints the counters)", name)
		}
		var dirs map[string]map[string]uint64
		if err := json.Unmarshal(raw, &dirs); err != nil {
			return nil, errorf(0, "ip -j -s link: %s: stats: %v", name, err)
		}
		st := NetdevStats{Device: name, Counters: map[string]uint64{}}
		for _, dir := range []string{"rx", "tx"} {
			for k, v := range dirs[dir] {
				if sysfs, ok := ipJSONNames[k]; ok {
					k = sysfs
				}
				st.Counters[statName(dir, k)] = v
			}
		}
		out = append(out, st)
	}
	return finishNetdev(out, "ip -j -s link")
}

// finishNetdev fills the typed fields and sorts by device, refusing
// devices without counters (ip link without -s).
func finishNetdev(out []NetdevStats, tool string) ([]NetdevStats, error) {
	if len(out) == 0 {
		return nil, errorf(0, "%s: no interfaces in the input", tool)
	}
	for i := range out {
		if len(out[i].Counters) == 0 {
			return nil, errorf(0, "%s: %s has no counters; give the output of ip -s link (-s prints them)", tool, out[i].Device)
		}
		out[i].fill()
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Device < out[j].Device })
	return out, nil
}

// checkEthtoolStats refuses ethtool -S output: the driver's own counters,
// named by each driver (veth's rx_queue_0_xdp_packets; tun has none), not
// the interface counters this kind reads.
func checkEthtoolStats(lines []string) error {
	for i, l := range lines {
		s := strings.TrimSpace(l)
		if s == "" {
			continue
		}
		if s == "NIC statistics:" || s == "no stats available" {
			return errorf(i+1, "this is ethtool -S (the driver's own counters, named by each driver), not the interface counters; give /proc/net/dev, /sys/class/net/DEV/statistics or ip -s link")
		}
		return nil
	}
	return nil
}
