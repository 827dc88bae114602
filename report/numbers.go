package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// scaleFor picks a display scale for values of unit around v.
func scaleFor(unit string, v float64) (div float64, suffix string) {
	switch unit {
	case "pps":
		if v >= 1e7 {
			return 1e6, "Mpps"
		}
		return 1e3, "Kpps"
	case "bit/s":
		if v >= 1e9 {
			return 1e9, "Gbit/s"
		}
		return 1e6, "Mbit/s"
	}
	return 1, ""
}

// num formats v with at least 3 significant digits and no exponent.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// grouped formats an integer-ish value with thousands separators, as perf
// does.
func grouped(v float64) string {
	if math.Abs(v) < 1000 && v != math.Trunc(v) {
		return num(v)
	}
	s := strconv.FormatFloat(math.Round(math.Abs(v)), 'f', 0, 64)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if v < 0 {
		return "-" + string(out)
	}
	return string(out)
}

// si formats v with an SI prefix (k, M, G), benchstat style.
func si(v float64) string {
	a := math.Abs(v)
	for _, p := range []struct {
		f float64
		s string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if a >= p.f {
			x := v / p.f
			return strconv.FormatFloat(x, 'f', 4-len(strconv.FormatFloat(math.Abs(math.Trunc(x)), 'f', 0, 64)), 64) + p.s
		}
	}
	if a >= 1000 || a == math.Trunc(a) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// pct formats a percent change: "+5.30%", "+1.16e+08%" for huge changes
// (from a base near 0), "+inf%" from a base of exactly 0.
func pct(v float64) string {
	switch {
	case math.IsNaN(v):
		return "?"
	case math.IsInf(v, 1):
		return "+inf%"
	case math.IsInf(v, -1):
		return "-inf%"
	case math.Abs(v) >= 1e4:
		return fmt.Sprintf("%+.3g%%", v)
	}
	return fmt.Sprintf("%+.2f%%", v)
}

func ptr(v float64) *float64 { return &v }

// countText writes a packet count the way people say it: 10M, 2.5M, 100k.
func countText(n float64) string {
	for _, p := range []struct {
		f float64
		s string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if n >= p.f {
			return strconv.FormatFloat(n/p.f, 'f', -1, 64) + p.s
		}
	}
	return strconv.FormatFloat(n, 'f', -1, 64)
}

// rateText formats a median for a thread table: pps in Kpps (plain pps
// below 1 Kpps), bit/s in Gbit/s or Mbit/s, counts as numbers.
func rateText(unit string, v float64) string {
	switch unit {
	case "pps":
		if math.Abs(v) < 1000 {
			return strconv.FormatFloat(v, 'f', 0, 64) + " pps"
		}
		return num(v/1e3) + " Kpps"
	case "bit/s":
		div, suf := scaleFor(unit, v)
		return num(v/div) + " " + suf
	}
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return num(v)
}

// siDigits is si with the given number of significant digits.
func siDigits(v float64, digits int) string {
	a := math.Abs(v)
	for _, p := range []struct {
		f float64
		s string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if a >= p.f {
			x := v / p.f
			return strconv.FormatFloat(x, 'f', max(0, digits-len(strconv.FormatFloat(math.Abs(math.Trunc(x)), 'f', 0, 64))), 64) + p.s
		}
	}
	if a == math.Trunc(a) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', digits, 64)
}

// siPrefix is the SI prefix letter s ends with, or "".
func siPrefix(s string) string {
	if s != "" && strings.ContainsRune("kMGT", rune(s[len(s)-1])) {
		return s[len(s)-1:]
	}
	return ""
}
