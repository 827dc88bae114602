// Package units formats numbers for people: every number a report, a
// table or a plan line shows goes through it, so a unit switches at one
// place and rounding never produces "1000 Kpps" or "10.000k".
//
// The rule behind every function: a value is first rounded to the digits
// it will show, and the unit or prefix is chosen from the rounded value.
// 999,999 pps is "1.00 Mpps", not "1000 Kpps"; 9999.6 is "10.00k", not
// "10.000k".
//
// A Scale says how values of one base unit read in a table (pps as pps,
// Kpps and Mpps; bit/s as Mbit/s and Gbit/s, or as MB/s); a workload's
// table picks one per row, and For gives the default of a base unit.
//
// units does not parse: perfparse reads tool output into base units.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// exp10 is the decimal exponent of a (> 0) once rounded to digits
// significant digits: exp10(999.6, 3) is 3 (it rounds to 1.00e3).
// strconv rounds, so the result agrees with what FormatFloat prints.
func exp10(a float64, digits int) int {
	s := strconv.FormatFloat(a, 'e', digits-1, 64)
	e, _ := strconv.Atoi(s[strings.LastIndexByte(s, 'e')+1:])
	return e
}

// Num formats v with 3 significant digits and no exponent for values that
// round to 1 or more: "452", "45.2", "4.52", "0.452", "1.00" (0.9996),
// "100" (99.96); "0" for 0.
func Num(v float64) string {
	a := math.Abs(v)
	if a == 0 {
		return "0"
	}
	if e := exp10(a, 3); e >= 0 {
		return strconv.FormatFloat(v, 'f', max(0, 2-e), 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

var siPrefixes = []string{"", "k", "M", "G", "T"}

// SI formats v benchstat-style: 4 significant digits and an SI prefix
// (k, M, G, T) from 1000 up, "452.0k", "1.000M" (999,999), "10.00k"
// (9999.6); below 1000 a whole number as is ("12") and others with 4
// significant digits ("12.35"). From 1000 up it prints what
// golang.org/x/perf/benchunit.Scale prints.
func SI(v float64) string { return SIDigits(v, 4) }

// smallPrefixes are the SI prefixes of 1e-6, 1e-9 and 1e-12.
var smallPrefixes = []string{"µ", "n", "p"}

// SIDigits is SI with the given number of significant digits (at least
// 1): SIDigits(952_300, 3) is "952k". A value that rounds below 1e-3
// takes a small prefix as benchunit.Scale does: SIDigits(1.234e-5, 3) is
// "12.3µ", SIDigits(1.834e-4, 4) "183.4µ" (not "0.0001834", nor, from
// 1e-4 down, strconv's exponent form); 0.00123 stays "0.00123".
func SIDigits(v float64, digits int) string {
	digits = max(digits, 1)
	a := math.Abs(v)
	if a == 0 {
		return "0"
	}
	e := exp10(a, digits)
	if e < -3 {
		return small(v, digits, e, smallPrefix(e))
	}
	if e < 3 {
		if a == math.Trunc(a) {
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		return strconv.FormatFloat(v, 'g', digits, 64)
	}
	p := min(e/3, len(siPrefixes)-1)
	return strconv.FormatFloat(v/math.Pow10(3*p), 'f', max(0, digits-1-(e-3*p)), 64) + siPrefixes[p]
}

// smallPrefix is the power p of 10^-3 whose prefix (smallPrefixes[p-2])
// a value of decimal exponent e (< -3) takes: e rounded down to a
// multiple of 3.
func smallPrefix(e int) int { return min(-((e - 2) / 3), len(smallPrefixes)+1) }

// small writes v (decimal exponent e once rounded) in 10^-3p with
// smallPrefixes[p-2], digits significant digits of v.
func small(v float64, digits, e, p int) string {
	return strconv.FormatFloat(v*math.Pow10(3*p), 'f', max(0, digits-1-(e+3*p)), 64) + smallPrefixes[p-2]
}

// Small is the small prefix that numbers shown together take (the
// power of 10^-3 of smallPrefixes[Small-2]; 0 for none), so that a
// median and its range of seconds read "79.72µ (74.6..184µ)", not
// "79.72µ (74.6µ..0.000184)".
type Small int

// SmallOf is the smallest prefix any of vs takes alone in SIDigits with
// digits significant digits (0 when none takes one).
func SmallOf(digits int, vs ...float64) Small {
	p := 0
	for _, v := range vs {
		if a := math.Abs(v); a != 0 {
			if e := exp10(a, max(digits, 1)); e < -3 {
				p = max(p, smallPrefix(e))
			}
		}
	}
	return Small(p)
}

// Digits writes v as SIDigits does, in prefix p when p is one.
func (p Small) Digits(v float64, digits int) string {
	digits = max(digits, 1)
	if p == 0 || v == 0 {
		return SIDigits(v, digits)
	}
	return small(v, digits, exp10(math.Abs(v), digits), int(p))
}

// Prefix is the SI prefix s (a text of SI, SIDigits or Small.Digits) ends
// with, or "".
func Prefix(s string) string {
	r, n := utf8.DecodeLastRuneInString(s)
	if n > 0 && strings.ContainsRune("kMGTµnp", r) {
		return s[len(s)-n:]
	}
	return ""
}

// Grouped formats a count with thousands separators, as perf stat does
// ("52,182,375,058"); a fraction that rounds below 1000 is Num's ("2.50",
// "523"), one that rounds to 1000 or more is rounded ("1,000" for 999.6).
func Grouped(v float64) string {
	a := math.Abs(v)
	if v != math.Trunc(v) && exp10(a, 3) < 3 {
		return Num(v)
	}
	s := strconv.FormatFloat(math.Round(a), 'f', 0, 64)
	var out []byte
	if v < 0 && s != "0" {
		out = append(out, '-')
	}
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// The marks Pct writes for a change no percentage describes. A legend
// that explains them (report's notes, history's tables) finds and names
// them by these constants, so the mark and its legend cannot drift.
const (
	// PctFromZero is a change from a base of exactly 0.
	PctFromZero = "from 0"
	// PctOver999 is a change of 1000 times the base or more.
	PctOver999 = ">999x"
)

// Pct formats a change in percent: "+5.30%"; from +10000% on (101 times
// the base or more, from a base near 0) as the factor, "536x", which a
// reader takes in at once where "+5.35e+04%" needs arithmetic, and
// ">999x" from 1000 times on, where the digits of a factor say nothing
// the two medians beside it do not ("1.16e+06x" did); "from 0" from a
// base of exactly 0, which no percentage or factor describes (+inf%
// did); "?" for NaN.
func Pct(v float64) string {
	switch {
	case math.IsNaN(v):
		return "?"
	case math.IsInf(v, 0):
		return PctFromZero
	case v >= 1e4:
		if f := 1 + v/100; f < 999.5 {
			return fmt.Sprintf("%.0fx", f)
		}
		return PctOver999
	}
	return fmt.Sprintf("%+.2f%%", v)
}

// Bytes writes a configured size in bytes exactly, one way in every
// table: "60 B", "1500 B", "1024 B" below 4 KiB (frame sizes, in bytes
// as the netdev tables write them), and from 4 KiB on in KiB or MiB where
// it is a whole number of them ("64 KiB", a socket's write), else in
// bytes ("212960 B"). s is the size as configured; a value that is no
// whole number of bytes is returned as it is.
func Bytes(s string) string {
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		return s
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 4<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

// Count writes a configured count the way people say it, exactly: 10M,
// 2.5M, 100k, 1.5G, 999 (no rounding: 10,000,001 is "10.000001M").
func Count(n float64) string {
	for _, p := range []struct {
		f float64
		s string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(n) >= p.f {
			return strconv.FormatFloat(n/p.f, 'f', -1, 64) + p.s
		}
	}
	return strconv.FormatFloat(n, 'f', -1, 64)
}

// Plural writes n and noun, the noun in the plural unless n is 1: "1 run",
// "3 runs", "0 samples", "2 run directories" (a consonant's y is ies). Log
// lines and tables that CI logs quote say "1 run", never "1 runs".
func Plural(n int, noun string) string {
	if n != 1 {
		if stem, ok := strings.CutSuffix(noun, "y"); ok && stem != "" && !strings.ContainsRune("aeiou", rune(stem[len(stem)-1])) {
			noun = stem + "ie"
		}
		noun += "s"
	}
	return strconv.Itoa(n) + " " + noun
}

// AndList joins a list the way people say it: "a", "a and b", "a, b and
// c"; "" for none.
func AndList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
