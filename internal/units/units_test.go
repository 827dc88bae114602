package units

import (
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/perf/benchunit"
)

func TestNum(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {452, "452"}, {-452, "-452"}, {45.25, "45.2"}, {4.525, "4.53"}, {0.4525, "0.453"}, {0.5, "0.5"},
		{0.0012, "0.0012"}, {1234.5, "1234"}, {1e6, "1000000"},
		// Boundaries: the rounded value decides the digits.
		{0.9994, "0.999"}, {0.9996, "1.00"}, {1, "1.00"},
		{9.994, "9.99"}, {9.996, "10.0"}, {10, "10.0"},
		{99.94, "99.9"}, {99.96, "100"}, {100, "100"},
		{999.4, "999"}, {999.6, "1000"},
		{-9.996, "-10.0"},
	} {
		if got := Num(tc.v); got != tc.want {
			t.Errorf("Num(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestSI(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {12, "12"}, {12.5, "12.5"}, {0.25, "0.25"}, {999, "999"}, {999.4, "999.4"},
		{1000, "1.000k"}, {1234, "1.234k"}, {12345, "12.35k"}, {452000, "452.0k"}, {-452000, "-452.0k"},
		{1.008e6, "1.008M"}, {2.5e9, "2.500G"}, {3e12, "3.000T"}, {1.5e15, "1500T"},
		// The bugs, and every other prefix boundary.
		{999999, "1.000M"}, {9999.6, "10.00k"}, {99999.6, "100.0k"}, {999.96, "1.000k"},
		{999_950_000, "1.000G"}, {999_949_999, "999.9M"}, {9_999_500, "10.00M"}, {9_999_499, "9.999M"},
	} {
		if got := SI(tc.v); got != tc.want {
			t.Errorf("SI(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// From 1000 up SI prints what benchunit.Scale prints (benchstat's own
// formatting), boundaries included.
func TestSIMatchesBenchunit(t *testing.T) {
	vals := []float64{999.95, 1000, 9999.5, 9999.49, 99995, 99994.9, 999950, 999949, 1e9, 999_950_000, 1.23456e12, 9.9995e12}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		vals = append(vals, math.Pow(10, 3+11*r.Float64()))
	}
	for _, v := range vals {
		for _, x := range []float64{v, -v} {
			if got, want := SI(x), benchunit.Scale(x, benchunit.Decimal); got != want {
				t.Errorf("SI(%v) = %q, benchunit.Scale = %q", x, got, want)
			}
		}
	}
}

func TestSIDigits(t *testing.T) {
	for _, tc := range []struct {
		v      float64
		digits int
		want   string
	}{
		{952300, 3, "952k"}, {952300, 4, "952.3k"}, {952300, 6, "952.300k"},
		{999999, 3, "1.00M"}, {999499, 3, "999k"}, {9996, 3, "10.0k"}, {9994, 3, "9.99k"},
		{14.1, 3, "14.1"}, {8.95, 3, "8.95"}, {1000, 1, "1k"}, {1500, 1, "2k"}, {42, 0, "42"},
		// Below 1e-3 a small prefix, never an exponent (a jitter of
		// 183 µs once read "0.000183" beside "79.7µ").
		{0.000123, 3, "123µ"}, {1.234e-5, 3, "12.3µ"}, {-9.996e-5, 3, "-100µ"}, {1.2e-6, 3, "1.20µ"},
		{0.00123, 3, "0.00123"}, {0.0009996, 3, "0.001"}, {0.0009994, 3, "999µ"},
		{4.56e-8, 3, "45.6n"}, {7e-13, 3, "0.700p"}, {3e-16, 2, "0.00030p"},
	} {
		if got := SIDigits(tc.v, tc.digits); got != tc.want {
			t.Errorf("SIDigits(%v, %d) = %q, want %q", tc.v, tc.digits, got, tc.want)
		}
	}
	if Prefix("9.70k") != "k" || Prefix("14.1") != "" || Prefix("") != "" {
		t.Error("Prefix")
	}
}

func TestGrouped(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {402, "402"}, {52182375058, "52,182,375,058"}, {-1234567, "-1,234,567"}, {1000, "1,000"},
		{2.5, "2.50"}, {22.137, "22.1"}, {523.4, "523"}, {999.4, "999"}, {999.6, "1,000"}, {1234.5, "1,235"},
	} {
		if got := Grouped(tc.v); got != tc.want {
			t.Errorf("Grouped(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestPct(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{5.3, "+5.30%"}, {-100, "-100.00%"}, {0, "+0.00%"}, {9999.994, "+9999.99%"}, {1e4, "101x"}, {5.35e4, "536x"},
		{99840, "999x"}, {99850, ">999x"}, {1.16e8, ">999x"}, {math.Inf(1), "from 0"}, {math.Inf(-1), "from 0"}, {math.NaN(), "?"},
	} {
		if got := Pct(tc.v); got != tc.want {
			t.Errorf("Pct(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// Every table writes a size one way: vsock's payload once read
// "65536B" beside "60 B packets".
func TestBytes(t *testing.T) {
	for in, want := range map[string]string{
		"60": "60 B", "64": "64 B", "1024": "1024 B", "1500": "1500 B", "4096": "4 KiB", "9000": "9000 B",
		"65536": "64 KiB", "212960": "212960 B", "1048576": "1 MiB", "1572864": "1536 KiB", "0": "0 B", "1.5": "1.5", "": "",
	} {
		if got := Bytes(in); got != want {
			t.Errorf("Bytes(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{10e6, "10M"}, {2.5e6, "2.5M"}, {100e3, "100k"}, {999, "999"}, {1000, "1k"}, {999999, "999.999k"}, {1.5e9, "1.5G"}, {0, "0"},
	} {
		if got := Count(tc.v); got != tc.want {
			t.Errorf("Count(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// Every unit boundary of every scale, from both sides.
func TestScaleFormat(t *testing.T) {
	for _, tc := range []struct {
		name  string
		scale Scale
		v     float64
		want  string
	}{
		{"pps zero", PacketRate, 0, "0 pps"},
		{"pps", PacketRate, 12.4, "12 pps"},
		{"pps below Kpps", PacketRate, 999.4, "999 pps"},
		{"pps rounds to Kpps", PacketRate, 999.6, "1.00 Kpps"},
		{"Kpps", PacketRate, 1000, "1.00 Kpps"},
		{"Kpps digits", PacketRate, 18040, "18.0 Kpps"},
		{"Kpps", PacketRate, 452862, "453 Kpps"},
		{"Kpps below Mpps", PacketRate, 999_400, "999 Kpps"},
		{"Kpps rounds to Mpps", PacketRate, 999_999, "1.00 Mpps"},
		{"Mpps", PacketRate, 1_000_000, "1.00 Mpps"},
		{"Mpps, not 2500 Kpps", PacketRate, 2.5e6, "2.50 Mpps"},
		{"Mpps", PacketRate, 1_155_294, "1.16 Mpps"},
		{"Mpps large", PacketRate, 14.88e6, "14.9 Mpps"},
		{"negative", PacketRate, -2.5e6, "-2.50 Mpps"},
		{"Mbit/s small", BitRate, 5e5, "0.5 Mbit/s"},
		{"Mbit/s", BitRate, 941e6, "941 Mbit/s"},
		{"Mbit/s below Gbit/s", BitRate, 999.4e6, "999 Mbit/s"},
		{"Mbit/s rounds to Gbit/s", BitRate, 999.6e6, "1.00 Gbit/s"},
		{"Gbit/s", BitRate, 9.41e9, "9.41 Gbit/s"},
		{"MB/s", MBps, 8e9, "1000 MB/s"},
		{"MB/s digits", MBps, 1.2e9, "150 MB/s"},
		{"MB/s small", MBps, 8e6 * 2.345, "2.35 MB/s"},
		{"seconds", Seconds, 2.5, "2.50 s"},
		{"ns per packet", Nanoseconds, 396.4, "396 ns"},
		{"ns per packet from 1 us", Nanoseconds, 999.6, "1.00 us"},
		{"ns per packet in ms", Nanoseconds, 2.5e6, "2.50 ms"},
		{"ns by its base unit", For("ns"), 45.67, "45.7 ns"},
		{"percent", Percent, 0.125, "12.5%"},
		{"percent small", Percent, 0.0012, "0.12%"},
		{"plain whole", Scale{}, 25482253, "25482253"},
		{"plain fraction", Scale{}, 12.5, "12.5"},
	} {
		if got := tc.scale.Format(tc.v); got != tc.want {
			t.Errorf("%s: Format(%v) = %q, want %q", tc.name, tc.v, got, tc.want)
		}
	}
}

func TestFor(t *testing.T) {
	for base, want := range map[string]string{"pps": "2.50 Mpps", "bit/s": "2.50 Mbit/s", "s": "2500000 s", "count": "2500000", "events": "2500000"} {
		if got := For(base).Format(2.5e6); got != want {
			t.Errorf("For(%q).Format(2.5e6) = %q, want %q", base, got, want)
		}
	}
}

// A column's unit is chosen by its smallest nonzero value: every value
// then reads 1 or more.
func TestCommon(t *testing.T) {
	for _, tc := range []struct {
		name  string
		scale Scale
		vals  []float64
		want  string
	}{
		{"sweep in Kpps", PacketRate, []float64{1_008_000, 606_000, 961_000}, "Kpps"},
		{"all above 1 Mpps", PacketRate, []float64{1.2e6, 3e6}, "Mpps"},
		{"rounds to 1 Mpps", PacketRate, []float64{999_999, 3e6}, "Mpps"},
		{"zeros ignored", PacketRate, []float64{0, 2e6}, "Mpps"},
		{"only zeros", PacketRate, []float64{0, 0}, "pps"},
		{"nothing", BitRate, nil, "Mbit/s"},
		{"below the smallest unit", BitRate, []float64{1e3}, "Mbit/s"},
		{"plain", Scale{}, []float64{5}, ""},
	} {
		if got := tc.scale.Common(tc.vals).Name; got != tc.want {
			t.Errorf("%s: Common(%v) = %q, want %q", tc.name, tc.vals, got, tc.want)
		}
	}
	u := PacketRate.Common([]float64{1_008_000, 606_000})
	if got := u.Number(1_008_000); got != "1008" {
		t.Errorf("1,008,000 pps in Kpps = %q, want 1008", got)
	}
	if got := PacketRate.Common([]float64{12}).Number(12.4); got != "12" {
		t.Errorf("12.4 pps in pps = %q, want 12", got)
	}
}

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n          int
		noun, want string
	}{
		{1, "run", "1 run"}, {0, "run", "0 runs"}, {3, "sample", "3 samples"},
		{1, "run directory", "1 run directory"}, {2, "run directory", "2 run directories"},
		{2, "day", "2 days"}, {2, "y", "2 ys"}, {-1, "cell", "-1 cells"},
	} {
		if got := Plural(tc.n, tc.noun); got != tc.want {
			t.Errorf("Plural(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}

// AndList is the list joiner of report's interval notes ("95% at 5, 10
// and 20 runs") and the plan's busy threads ("4 kpktgend threads, 1
// vhost-net worker and 1 vCPU").
func TestAndList(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""}, {[]string{"a"}, "a"}, {[]string{"a", "b"}, "a and b"},
		{[]string{"a", "b", "c"}, "a, b and c"}, {[]string{"a", "b", "c", "d"}, "a, b, c and d"},
	} {
		if got := AndList(tc.in); got != tc.want {
			t.Errorf("AndList(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Numbers shown together (a median and its range) take one small prefix
// when any of them takes one alone, and SmallOf is none when none does.
func TestSmallTogether(t *testing.T) {
	for _, tc := range []struct {
		digits int
		vs     []float64
		want   []string
	}{
		{3, []float64{74.6e-6, 184e-6}, []string{"74.6µ", "184µ"}},
		{3, []float64{0.0015, 74.6e-9}, []string{"1500000n", "74.6n"}},
		{3, []float64{0, 2.5e-5}, []string{"0", "25.0µ"}},
		{3, []float64{0.0015, 0.25}, []string{"0.0015", "0.25"}},
		{3, []float64{452e3, 12}, []string{"452k", "12"}},
	} {
		p := SmallOf(tc.digits, tc.vs...)
		for i, v := range tc.vs {
			if got := p.Digits(v, tc.digits); got != tc.want[i] {
				t.Errorf("%v: SmallOf(%d, ...).Digits(%v) = %q, want %q", tc.vs, tc.digits, v, got, tc.want[i])
			}
		}
	}
	if p := SmallOf(3, 0.5, 2e3); p != 0 {
		t.Errorf("SmallOf(3, 0.5, 2000) = %d, want 0: neither takes a small prefix", p)
	}
}
