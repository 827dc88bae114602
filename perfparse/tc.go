package perfparse

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"
	"strconv"
)

// Qdisc is one qdisc from `tc -s -j qdisc show`, with its statistics.
type Qdisc struct {
	// Dev is the device when tc printed it (show without "dev").
	Dev    string `json:"dev,omitempty"`
	Kind   string `json:"kind"`
	Handle string `json:"handle"`
	Parent string `json:"parent,omitempty"`
	Root   bool   `json:"root,omitempty"`
	// Options is tc's "options" object as printed.
	Options json.RawMessage `json:"options,omitempty"`
	// Bytes, Packets, Drops, Overlimits and Requeues are the counters
	// since the qdisc was created; Backlog (bytes) and Qlen (packets) are
	// the current queue.
	Bytes      uint64 `json:"bytes"`
	Packets    uint64 `json:"packets"`
	Drops      uint64 `json:"drops"`
	Overlimits uint64 `json:"overlimits"`
	Requeues   uint64 `json:"requeues"`
	Backlog    uint64 `json:"backlog"`
	Qlen       uint64 `json:"qlen"`
	// Extra holds any other numeric member (fq_codel's maxpacket,
	// drop_overlimit, new_flow_count, ecn_mark, ...) under tc's name.
	Extra map[string]uint64 `json:"extra,omitempty"`
}

// ParseTCQdisc parses `tc -s -j qdisc show [dev DEV]` (a JSON array).
func ParseTCQdisc(r io.Reader) ([]Qdisc, error) {
	data, err := readUnquoted(r)
	if err != nil {
		return nil, err
	}
	var raw []map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, jsonError(data, dec.InputOffset(), err, "tc -s -j qdisc show (a JSON array)")
	}
	out := []Qdisc{}
	for i, m := range raw {
		q := Qdisc{}
		var errs []error
		str := func(k string) string {
			var s string
			if v, ok := m[k]; ok && json.Unmarshal(v, &s) != nil {
				errs = append(errs, errorf(0, "tc qdisc %d: %s is not a string", i, k))
			}
			return s
		}
		q.Dev, q.Kind, q.Handle, q.Parent = str("dev"), str("kind"), str("handle"), str("parent")
		if v, ok := m["root"]; ok {
			_ = json.Unmarshal(v, &q.Root)
		}
		if v, ok := m["options"]; ok {
			q.Options = v
		}
		if len(errs) > 0 {
			return nil, errs[0]
		}
		if q.Kind == "" {
			return nil, errorf(0, "tc qdisc %d has no kind: not tc -j qdisc output", i)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			var num json.Number
			d := json.NewDecoder(bytes.NewReader(m[k]))
			d.UseNumber()
			if d.Decode(&num) != nil {
				continue
			}
			n, err := strconv.ParseUint(num.String(), 10, 64)
			if err != nil || k == "refcnt" {
				continue // refcnt may be signed; non-counts are skipped
			}
			switch k {
			case "bytes":
				q.Bytes = n
			case "packets":
				q.Packets = n
			case "drops":
				q.Drops = n
			case "overlimits":
				q.Overlimits = n
			case "requeues":
				q.Requeues = n
			case "backlog":
				q.Backlog = n
			case "qlen":
				q.Qlen = n
			default:
				if q.Extra == nil {
					q.Extra = map[string]uint64{}
				}
				q.Extra[k] = n
			}
		}
		out = append(out, q)
	}
	return out, nil
}
