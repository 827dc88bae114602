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
	// The kernel never resets it: not between runs, nor when
	// imix_weights is written again (slot by slot, the new sizes' counts
	// go on from the old ones'); see SetImixBytesSince.
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

// SetImixBytesSince sets the bytes of d's IMIX run from the growth of the
// per-size counts since before, a capture of the same device file taken
// after the previous run (or after configuring): the kernel keeps each
// imix_size_counts slot's count across runs and across rewrites of
// imix_weights (Debian 6.1: slot counts 232233 and 132113 became 370824
// and 271000 after "imix_weights 60,1 1514,1" and a 277478-packet run), so
// a later run's bytes are Σ size × (count − count before), slot by slot,
// when that growth is the run's packet count. Otherwise before is not the
// capture just before this run: an error says why, and d is unchanged.
func (d *PktgenDevice) SetImixBytesSince(before *PktgenDevice) error {
	r := d.Result
	if r == nil || !r.Run || len(d.Imix) == 0 {
		return errorf(0, "pktgen: no IMIX run result to take the bytes of (imix_weights and a \"Result: OK:\" run line are needed)")
	}
	if before == nil || len(before.Imix) < len(d.Imix) {
		return errorf(0, "pktgen: the earlier capture has imix_size_counts for fewer sizes than this run's %d; give the device file read just before this run", len(d.Imix))
	}
	var n, bytes uint64
	for i, e := range d.Imix {
		b := before.Imix[i].Count
		if e.Count == nil || b == nil {
			return errorf(0, "pktgen: imix_size_counts missing (Current section cut?); both captures need it")
		}
		if *b > *e.Count {
			return errorf(0, "pktgen: imix_size_counts slot %d fell from %d to %d: the earlier capture is not of this device since its module was loaded", i, *b, *e.Count)
		}
		n += *e.Count - *b
		bytes += (*e.Count - *b) * e.SizeBytes
	}
	if n != r.Packets {
		return errorf(0, "pktgen: imix_size_counts grew by %d packets since the earlier capture, the run sent %d; give the device file read just before this run", n, r.Packets)
	}
	r.Bytes, r.BytesUnknown = bytes, false
	return nil
}
