package schema

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vnetbench/vnetbench/internal/lazyre"
)

// MaxListLen bounds every list (axis values, targets, events).
const MaxListLen = 256

// Scalar returns a scalar node's text, or a message saying it wants one
// ("want WANT, got ...").
func Scalar(n *yaml.Node, path, want string) (string, string) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		if n.Kind == yaml.SequenceNode {
			return "", fmt.Sprintf("%s: want %s, got a list (only axis keys take a list of values to compare)", path, want)
		}
		return "", fmt.Sprintf("%s: want %s, got %s", path, want, Describe(n))
	}
	return n.Value, ""
}

// ParseInt reads an integer scalar; hint follows "want an integer" in the
// message (" or auto").
func ParseInt(n *yaml.Node, c *Ctx, hint string) (int64, string) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		if n.Kind == yaml.SequenceNode && !c.Axis {
			return 0, fmt.Sprintf("%s: want an integer%s, got a list (only axis keys take a list of values to compare)", c.Path, hint)
		}
		return 0, fmt.Sprintf("%s: want an integer%s, got %s", c.Path, hint, Describe(n))
	}
	x, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil {
		return 0, fmt.Sprintf("%s: integer %s out of range", c.Path, n.Value)
	}
	return x, ""
}

// Unbounded integer limits for Int.
const (
	NoMin = math.MinInt64
	NoMax = math.MaxInt64
)

type integer interface{ ~int | ~int64 | ~uint64 }

// Int binds an integer key in [lo, hi] (NoMin, NoMax: unbounded).
func Int[T integer](p *T, key string, lo, hi int64) *Leaf[T] {
	return Value(p, key, intKind[T]("integer", lo, hi, "", 0))
}

// IntOr binds an integer key in [lo, hi] that also takes word, stored as
// wordValue ("queues: auto" = 0).
func IntOr[T integer](p *T, key string, lo, hi int64, word string, wordValue T) *Leaf[T] {
	return Value(p, key, intKind("integer or `"+word+"`", lo, hi, word, wordValue))
}

func intKind[T integer](typ string, lo, hi int64, word string, wordValue T) Kind[T] {
	hint := ""
	if word != "" {
		hint = " or " + word
	}
	return Kind[T]{
		Type: typ,
		Parse: func(n *yaml.Node, c *Ctx) (T, string) {
			if word != "" && n.Kind == yaml.ScalarNode && n.Tag == "!!str" && n.Value == word {
				return wordValue, ""
			}
			x, msg := ParseInt(n, c, hint)
			if msg != "" {
				return 0, msg
			}
			if x < lo {
				if x < 0 && lo == 0 {
					return 0, fmt.Sprintf("%s: must not be negative, got %d", c.Path, x)
				}
				if word != "" {
					return 0, fmt.Sprintf("%s: %d is below the minimum %d; use %d or more, or %s", c.Path, x, lo, lo, word)
				}
				return 0, fmt.Sprintf("%s: %d is below the minimum %d", c.Path, x, lo)
			}
			if x > hi {
				return 0, fmt.Sprintf("%s: %d is above the maximum %d", c.Path, x, hi)
			}
			return T(x), ""
		},
		Format: func(v T) string {
			if word != "" && v == wordValue {
				return word
			}
			return fmt.Sprint(v)
		},
	}
}

// Bool binds a true/false key.
func Bool(p *bool, key string) *Leaf[bool] {
	return Value(p, key, Kind[bool]{
		Type: "boolean",
		Parse: func(n *yaml.Node, c *Ctx) (bool, string) {
			if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
				return false, fmt.Sprintf("%s: want true or false, got %s", c.Path, Describe(n))
			}
			return strings.EqualFold(n.Value, "true"), ""
		},
		Format: strconv.FormatBool,
	})
}

// Enum binds a key that takes one of values; "" among them means the key
// may be left unset.
func Enum(p *string, key string, values ...string) *Leaf[string] {
	shown := nonEmpty(values)
	want := "one of " + strings.Join(shown, ", ")
	return Value(p, key, Kind[string]{
		Type: enumType(values),
		Parse: func(n *yaml.Node, c *Ctx) (string, string) {
			s, msg := Scalar(n, c.Path, want)
			if msg != "" {
				return "", msg
			}
			return s, checkEnum(s, c.Path, values)
		},
		Format: func(s string) string { return s },
	})
}

func nonEmpty(values []string) []string {
	return slices.DeleteFunc(slices.Clone(values), func(a string) bool { return a == "" })
}

func checkEnum(s, path string, values []string) string {
	if slices.Contains(values, s) {
		return ""
	}
	shown := nonEmpty(values)
	if len(shown) < len(values) {
		shown = append(shown, "or leave it unset")
	}
	return fmt.Sprintf("unknown %s %q%s (allowed: %s)", path, s, DidYouMean(s, values), strings.Join(shown, ", "))
}

func enumType(values []string) string {
	out := make([]string, len(values))
	for i, v := range values {
		if v == "" {
			out[i] = "(unset)"
		} else {
			out[i] = "`" + v + "`"
		}
	}
	return strings.Join(out, ", ")
}

// String binds a string key whose values check accepts (check returns
// the whole error message, "" = ok; nil accepts anything). typ is the
// reference's type column.
func String(p *string, key, typ string, check func(string) string) *Leaf[string] {
	if typ == "" {
		typ = "string"
	}
	return Value(p, key, Kind[string]{
		Type: typ,
		Parse: func(n *yaml.Node, c *Ctx) (string, string) {
			s, msg := Scalar(n, c.Path, "a value")
			if msg != "" || check == nil {
				return s, msg
			}
			return s, check(s)
		},
		Format: func(s string) string { return s },
	})
}

// Path binds a file or directory path.
func Path(p *string, key string) *Leaf[string] {
	return String(p, key, "path", func(s string) string {
		if s == "" || strings.ContainsAny(s, "\x00\n") {
			return fmt.Sprintf("bad path %q; give a file or directory path", s)
		}
		return ""
	})
}

// Duration binds a Go duration (500ms, 120s, 2m) between 0 and 24h.
func Duration(p *time.Duration, key string) *Leaf[time.Duration] {
	return Value(p, key, Kind[time.Duration]{
		Type: "duration",
		Parse: func(n *yaml.Node, c *Ctx) (time.Duration, string) {
			if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
				return 0, fmt.Sprintf("%s: duration %s has no unit; write %ss (Go duration: 500ms, 120s, 2m)", c.Path, n.Value, n.Value)
			}
			s, msg := Scalar(n, c.Path, "a duration such as 120s")
			if msg != "" {
				return 0, msg
			}
			d, err := time.ParseDuration(s)
			switch {
			case err != nil:
				return 0, fmt.Sprintf("%s: bad duration %q; use a Go duration such as 500ms, 120s or 1m30s", c.Path, s)
			case d < 0:
				return 0, fmt.Sprintf("%s: duration must not be negative, got %s", c.Path, s)
			case d > 24*time.Hour:
				return 0, fmt.Sprintf("%s: %s is longer than 24h; split the scenario", c.Path, s)
			}
			return d, ""
		},
		Format: FormatDuration,
	})
}

// FormatDuration prints a duration the way a scenario would write it
// ("2m", not "2m0s").
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	s := d.String()
	for _, suf := range []string{"0s", "0m"} {
		if strings.HasSuffix(s, "m"+suf) || strings.HasSuffix(s, "h"+suf) {
			s = strings.TrimSuffix(s, suf)
		}
	}
	return s
}

// SizeMiB binds a memory size (512MiB, 1GiB), stored in MiB.
func SizeMiB(p *int, key string) *Leaf[int] {
	return Value(p, key, Kind[int]{
		Type: "size",
		Parse: func(n *yaml.Node, c *Ctx) (int, string) {
			s, msg := Scalar(n, c.Path, "a size such as 512MiB or 1GiB")
			if msg != "" {
				return 0, msg
			}
			mib, msg := ParseMiB(s)
			if msg != "" {
				return 0, c.Path + ": " + msg
			}
			return mib, ""
		},
		Format: FormatMiB,
	})
}

var memRE = lazyre.New(`^([0-9]+)\s*([A-Za-z]*)$`)

// ParseMiB parses "1GiB", "512MiB", "2097152KiB" into MiB (at least 64).
func ParseMiB(s string) (int, string) {
	m := memRE().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Sprintf("bad size %q; use a whole number with KiB, MiB or GiB such as 512MiB or 1GiB", s)
	}
	x, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || x > 1<<40 {
		return 0, fmt.Sprintf("size %q is out of range", s)
	}
	var kib int64
	switch m[2] {
	case "KiB":
		kib = x
	case "MiB":
		kib = x << 10
	case "GiB":
		kib = x << 20
	case "":
		return 0, fmt.Sprintf("size %s has no unit; write %sMiB or use GiB", s, m[1])
	case "K", "k", "KB", "kB", "M", "MB", "G", "GB", "Mi", "Gi", "m", "g":
		fix := map[byte]string{'K': "KiB", 'k': "KiB", 'M': "MiB", 'm': "MiB", 'G': "GiB", 'g': "GiB"}[m[2][0]]
		return 0, fmt.Sprintf("size unit %q is ambiguous; write %s%s (binary units KiB, MiB, GiB)", m[2], m[1], fix)
	default:
		return 0, fmt.Sprintf("unknown size unit %q; use KiB, MiB or GiB such as 512MiB or 1GiB", m[2])
	}
	if kib%1024 != 0 {
		return 0, fmt.Sprintf("size %s is not a whole number of MiB", s)
	}
	mib := kib >> 10
	if mib < 64 {
		return 0, fmt.Sprintf("size %s is below 64MiB; a guest needs at least that", s)
	}
	if mib > 1<<20 {
		return 0, fmt.Sprintf("size %s is above 1024GiB", s)
	}
	return int(mib), ""
}

// FormatMiB prints MiB as the largest exact binary unit.
func FormatMiB(mib int) string {
	if mib%1024 == 0 {
		return strconv.Itoa(mib/1024) + "GiB"
	}
	return strconv.Itoa(mib) + "MiB"
}

// CPUs binds a CPU list in the kernel's cpulist syntax ("0-3,6") or
// "none" (nil).
func CPUs(p *[]int, key string) *Leaf[[]int] {
	return Value(p, key, Kind[[]int]{
		Type: "CPU list",
		Parse: func(n *yaml.Node, c *Ctx) ([]int, string) {
			s, msg := Scalar(n, c.Path, "a CPU list such as 0, 0-3 or 0,2 (or none)")
			if msg != "" {
				return nil, msg
			}
			cpus, msg := ParseCPUList(s)
			if msg != "" {
				return nil, c.Path + ": " + msg
			}
			return cpus, ""
		},
		Format: FormatCPUs,
	})
}

// ParseCPUList parses "0", "0-3,6" or "none" (nil) into sorted CPUs.
func ParseCPUList(s string) ([]int, string) {
	bad := fmt.Sprintf("bad CPU list %q; use CPU numbers and ranges such as 0, 0-3 or 0,2,4-5 (or none)", s)
	s = strings.TrimSpace(s)
	if s == "none" {
		return nil, ""
	}
	if s == "" {
		return nil, bad
	}
	var set [4096]bool
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, bad
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, bad
			}
		}
		if b > 4095 {
			return nil, fmt.Sprintf("CPU %d is above 4095; use CPU numbers of this machine", b)
		}
		for c := a; c <= b; c++ {
			set[c] = true
		}
	}
	var cpus []int
	for c, ok := range set {
		if ok {
			cpus = append(cpus, c)
		}
	}
	return cpus, ""
}

// FormatCPUs prints a sorted CPU list in cpulist syntax ("0-3,6"), or
// "none" for nil.
func FormatCPUs(cpus []int) string {
	if len(cpus) == 0 {
		return "none"
	}
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", cpus[i], cpus[j])
		} else {
			fmt.Fprintf(&b, "%d", cpus[i])
		}
		i = j + 1
	}
	return b.String()
}

// PinPart is the cell name part of the threads stem names ("vhost",
// "vcpu", "gen") pinned to cpus, a CPU list as FormatCPUs writes it:
// "vhost-pin0", "vcpu-pin0-1", "gen-unpinned" for none. The scenario's
// pin keys name their cells with it (Leaf.Pin) and the results store
// turns a benchfmt name's "vhost=0" back into the same part.
func PinPart(stem, cpus string) string {
	if cpus == "none" {
		return stem + "-unpinned"
	}
	return stem + "-pin" + cpus
}

// Strings binds a list of words (a single word is a list of one) that
// check accepts (check gets the word and the key's path and returns the
// whole message, "" = ok). typ is the reference's type column.
func Strings(p *[]string, key, typ string, check func(s, path string) string) *Leaf[[]string] {
	return Value(p, key, Kind[[]string]{
		Type: typ,
		Parse: func(n *yaml.Node, c *Ctx) ([]string, string) {
			items := []*yaml.Node{n}
			if n.Kind == yaml.SequenceNode {
				items = n.Content
			}
			c.At(nil)
			if len(items) > MaxListLen {
				return nil, fmt.Sprintf("%s: %d values; at most %d", c.Path, len(items), MaxListLen)
			}
			out := make([]string, 0, len(items))
			for i, it := range items {
				p := fmt.Sprintf("%s[%d]", c.Path, i)
				c.At(it)
				s, msg := Scalar(it, p, "a word")
				if msg != "" {
					return nil, msg
				}
				if check != nil {
					if msg := check(s, c.Path); msg != "" {
						return nil, msg
					}
				}
				if slices.Contains(out, s) {
					return nil, fmt.Sprintf("%s: %q listed twice; list each once", c.Path, s)
				}
				c.Mark(p, it)
				out = append(out, s)
			}
			c.At(nil)
			return out, ""
		},
		Format:    func(v []string) string { return strings.Join(v, ",") },
		DocFormat: func(v []string) string { return "[" + strings.Join(v, ", ") + "]" },
	})
}

// EnumList binds a list of words from values.
func EnumList(p *[]string, key string, values ...string) *Leaf[[]string] {
	return Strings(p, key, "list of "+enumType(values), func(s, path string) string {
		return checkEnum(s, path, values)
	})
}
