package perfparse

import (
	"strconv"
	"strings"
)

// PktgenImixEntry is one packet size of pktgen's IMIX mode (Linux 5.15+,
// "imix_weights size,weight ..."): Params prints "imix_weights: S,W ..."
// and Current "imix_size_counts: S,N ...".
type PktgenImixEntry struct {
	SizeBytes uint64 `json:"size_bytes"`
	Weight    uint64 `json:"weight"`
	// Count is how many packets of this size pktgen built, nil when the
	// file has no imix_size_counts (a paste that cut the Current section).
	// The kernel does not reset it between runs, only when imix_weights
	// is written again.
	Count *uint64 `json:"count,omitempty"`
}

// parseImix reads the device's imix_weights and imix_size_counts.
func (d *PktgenDevice) parseImix() error {
	w, ok := d.Params["imix_weights"]
	if !ok {
		return nil
	}
	pairs, err := imixPairs("imix_weights", w, 0)
	if err != nil {
		return err
	}
	for _, p := range pairs {
		d.Imix = append(d.Imix, PktgenImixEntry{SizeBytes: p[0], Weight: p[1]})
	}
	if d.Current == nil {
		return nil
	}
	c, ok := d.Current.Fields["imix_size_counts"]
	if !ok {
		return nil
	}
	if pairs, err = imixPairs("imix_size_counts", c, d.countsLine); err != nil {
		return err
	}
	if len(pairs) != len(d.Imix) {
		return errorf(d.countsLine, "pktgen: imix_size_counts has %d sizes, imix_weights %d", len(pairs), len(d.Imix))
	}
	for i, p := range pairs {
		if p[0] != d.Imix[i].SizeBytes {
			return errorf(d.countsLine, "pktgen: imix_size_counts size %d where imix_weights has %d", p[0], d.Imix[i].SizeBytes)
		}
		d.Imix[i].Count = &p[1]
	}
	return nil
}

// checkImixField checks an imix list where it is read, so that an error
// names its line.
func (d *PktgenDevice) checkImixField(key, v string, ln int) error {
	if key != "imix_weights" && key != "imix_size_counts" {
		return nil
	}
	if key == "imix_size_counts" {
		d.countsLine = ln
	}
	_, err := imixPairs(key, v, ln)
	return err
}

// imixPairs reads pktgen's "A,B A,B ..." lists.
func imixPairs(key, v string, ln int) ([][2]uint64, error) {
	var out [][2]uint64
	for _, f := range strings.Fields(v) {
		a, b, ok := strings.Cut(f, ",")
		x, err1 := strconv.ParseUint(a, 10, 64)
		y, err2 := strconv.ParseUint(b, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, errorf(ln, "pktgen %s: %q is not \"size,number\"", key, f)
		}
		out = append(out, [2]uint64{x, y})
	}
	if len(out) == 0 {
		return nil, errorf(ln, "pktgen %s: no \"size,number\" pairs", key)
	}
	return out, nil
}

// setImixBytes replaces a run result's Packets × PktSize (the size of the
// last packet only, in IMIX mode) with the bytes of the packets counted
// per size, when those counts are this run's: they add up to Packets.
// Otherwise (counts of earlier runs included, or absent) the byte count
// is unknown and said so.
func (d *PktgenDevice) setImixBytes() {
	r := d.Result
	if len(d.Imix) == 0 || r == nil || !r.Run {
		return
	}
	r.Imix = true
	var n, bytes uint64
	for _, e := range d.Imix {
		if e.Count == nil {
			r.Bytes, r.BytesUnknown = 0, true
			return
		}
		n += *e.Count
		bytes += *e.Count * e.SizeBytes
	}
	if n != r.Packets {
		r.Bytes, r.BytesUnknown = 0, true
		return
	}
	r.Bytes, r.BytesUnknown = bytes, false
}
