package units

import (
	"math"
	"strconv"
)

// A Unit is one way of writing values of a base unit: Name ("Kpps") is
// Factor base units (1e3 pps).
type Unit struct {
	Factor float64
	Name   string
	// whole writes whole numbers ("12 pps"); otherwise 3 significant
	// digits (Num).
	whole bool
}

// Number writes v (in base units) in u, without the name: 452000 pps in
// Kpps is "452".
func (u Unit) Number(v float64) string {
	x := v / u.Factor
	if u.whole {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return Num(x)
}

// rounded is |v| in u as Number rounds it.
func (u Unit) rounded(v float64) float64 {
	x := math.Abs(v) / u.Factor
	if u.whole || x == 0 {
		return math.Round(x)
	}
	// 3 significant digits, as Num shows them.
	f, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'e', 2, 64), 64)
	return f
}

// A Scale is how values of one base unit read in a table: the Units it
// may write them in, smallest first. The zero Scale writes plain numbers.
type Scale struct {
	units []Unit
}

// The scales of the base units reports show.
var (
	// PacketRate writes packets/s as pps below 1 Kpps (whole numbers),
	// Kpps below 1 Mpps and Mpps from there: "12 pps", "452 Kpps",
	// "2.50 Mpps".
	PacketRate = Scale{[]Unit{{1, "pps", true}, {1e3, "Kpps", false}, {1e6, "Mpps", false}}}
	// BitRate writes bit/s as Mbit/s below 1 Gbit/s and Gbit/s from there
	// (iperf3's units): "941 Mbit/s", "9.41 Gbit/s".
	BitRate = Scale{[]Unit{{1e6, "Mbit/s", false}, {1e9, "Gbit/s", false}}}
	// MBps writes bit/s as megabytes per second, MB/s = 1e6 bytes/s (the
	// vsock series' unit): 8e9 bit/s is "1000 MB/s".
	MBps = Scale{[]Unit{{8e6, "MB/s", false}}}
	// Seconds writes seconds: "2.50 s".
	Seconds = Scale{[]Unit{{1, "s", false}}}
	// Nanoseconds writes nanoseconds (a CPU cost per packet): "396 ns",
	// "1.25 us" from 1 us, "2.50 ms" from 1 ms.
	Nanoseconds = Scale{[]Unit{{1, "ns", false}, {1e3, "us", false}, {1e6, "ms", false}}}
	// Latency writes seconds of a round trip or a queueing delay: "85.0
	// us", "1.25 ms" from 1 ms, "2.50 s" from 1 s.
	Latency = Scale{[]Unit{{1e-6, "us", false}, {1e-3, "ms", false}, {1, "s", false}}}
	// Percent writes a fraction (0..1) in percent: "12.5%".
	Percent = Scale{[]Unit{{0.01, "%", false}}}
	// TransactionRate writes transactions per second (TCP
	// request/response) as whole numbers, as netperf does: "12345 tps".
	TransactionRate = Scale{[]Unit{{1, "tps", true}}}
)

// IsZero reports whether s is the zero Scale (plain numbers), which
// callers may take as "not chosen".
func (s Scale) IsZero() bool { return len(s.units) == 0 }

// For returns the Scale of a base unit: PacketRate for "pps", BitRate for
// "bit/s", Seconds for "s", Nanoseconds for "ns", Percent for "fraction", TransactionRate for "tps", plain numbers for the
// rest (counts).
func For(base string) Scale {
	switch base {
	case "pps":
		return PacketRate
	case "bit/s":
		return BitRate
	case "s":
		return Seconds
	case "ns":
		return Nanoseconds
	case "fraction":
		return Percent
	case "tps":
		return TransactionRate
	}
	return Scale{}
}

// Format writes v (in base units) in the largest unit in which it reads
// 1 or more once rounded, else the smallest: "999 pps", "1.00 Kpps"
// (999.6 pps), "1.00 Mpps" (999,999 pps). Plain numbers are whole when v
// is, else 3 significant digits.
func (s Scale) Format(v float64) string {
	if len(s.units) == 0 {
		if v == math.Trunc(v) {
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		return Num(v)
	}
	u := s.Common([]float64{v})
	if u.Name == "%" {
		return u.Number(v) + "%"
	}
	return u.Number(v) + " " + u.Name
}

// Common picks one Unit for all of values, as benchunit.CommonScale does:
// the largest in which the smallest nonzero value reads 1 or more once
// rounded, else the smallest. A table column or a chart uses it to write
// every value in the unit its header names.
func (s Scale) Common(values []float64) Unit {
	if len(s.units) == 0 {
		return Unit{Factor: 1}
	}
	low := math.Inf(1)
	for _, v := range values {
		if a := math.Abs(v); a != 0 && a < low {
			low = a
		}
	}
	if math.IsInf(low, 1) {
		return s.units[0]
	}
	for i := len(s.units) - 1; i > 0; i-- {
		if s.units[i].rounded(low) >= 1 {
			return s.units[i]
		}
	}
	return s.units[0]
}
