package schema

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// A small schema with every section kind: values, an always-there
// section, an optional one, a list of mappings and a OneOf.
type doc struct {
	Size  int
	Wait  time.Duration
	Mode  string
	Inner inner
	Opt   *inner
	Items []item
	Pick  string
	Conf  Fielder
}

type inner struct{ CPUs []int }

func (i *inner) Fields() []Field {
	return []Field{CPUs(&i.CPUs, "cpus").Default(nil).Axis().Doc("CPUs")}
}

type item struct{ Name string }

func (i *item) Fields() []Field { return []Field{String(&i.Name, "name", "", nil).Doc("a name")} }

type variant struct{ N int }

func (v *variant) Fields() []Field {
	return []Field{Int(&v.N, "n", 1, 9).Default(1).Axis().Short("n").Doc("a number")}
}

func (d *doc) Fields() []Field {
	return []Field{
		Int(&d.Size, "size", 1, 100).Default(10).Unit("bytes").Axis().Short("s").Doc("a size"),
		Duration(&d.Wait, "wait").Default(time.Second).Doc("a wait"),
		Enum(&d.Mode, "mode", "", "fast", "slow").Axis().Bare().Doc("a mode"),
		Section("inner", &d.Inner).Doc("inner"),
		Optional(&d.Opt, "opt").Doc("optional"),
		List(&d.Items, "items", 4, "{name: x}").Doc("items"),
		OneOf("pick", []Variant{{Name: "a", Doc: "variant a", New: func() Fielder { return &variant{} }},
			{Name: "b", Doc: "variant b", New: func() Fielder { return &variant{} }}},
			func() (string, Fielder) { return d.Pick, d.Conf },
			func(name string, f Fielder) { d.Pick, d.Conf = name, f }).Doc("a choice").Example("pick: {a: {}}"),
	}
}

func decode(t *testing.T, src string) (*doc, *Decoder, error) {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatal(err)
	}
	d := NewDecoder("f.yaml")
	var x doc
	err := d.Decode(n.Content[0], &x)
	return &x, d, err
}

func TestDecodeOnceWithAxes(t *testing.T) {
	x, d, err := decode(t, "size: [20, 30]\nmode: [fast, slow]\ninner: {cpus: [\"0-1\", none]}\nitems: {name: one}\npick: {a: {n: [2, 3]}, b: {}}\n")
	if err != nil {
		t.Fatal(err)
	}
	// Every axis holds its first value; defaults fill the rest.
	if x.Size != 20 || x.Mode != "fast" || x.Wait != time.Second || len(x.Inner.CPUs) != 2 || x.Opt != nil ||
		len(x.Items) != 1 || x.Items[0].Name != "one" || x.Pick != "a" || x.Conf.(*variant).N != 2 {
		t.Errorf("decoded %+v", x)
	}
	var got []string
	for _, a := range d.Axes() {
		got = append(got, a.Key+"@"+a.Scope+"="+strings.Join(a.Values, "|"))
	}
	want := "size@=20|30 mode@=fast|slow inner.cpus@=0-1|none pick@=a|b pick.a.n@a=2|3"
	if strings.Join(got, " ") != want {
		t.Errorf("axes %q, want %q", strings.Join(got, " "), want)
	}
	// Set puts an axis's typed value on a copy, through the OneOf.
	fs := x.Fields()
	for _, a := range d.Axes() {
		if a.Key == "pick" {
			continue
		}
		if err := Set(fs, a.Key, a.Value(len(a.Values)-1)); err != nil {
			t.Fatal(err)
		}
	}
	if x.Size != 30 || x.Mode != "slow" || x.Inner.CPUs != nil || x.Conf.(*variant).N != 3 {
		t.Errorf("after Set %+v", x)
	}
	if err := Set(fs, "pick.b.n", 1); err == nil {
		t.Error("Set through the variant not chosen succeeded")
	}
	// Values: the current values, canonical; the absent optional is off.
	vals := map[string]string{}
	for _, p := range Values(fs) {
		vals[p.Key] = p.Value
	}
	if vals["size"] != "30" || vals["wait"] != "1s" || vals["inner.cpus"] != "none" || vals["opt"] != "off" || vals["pick.a.n"] != "3" {
		t.Errorf("values %v", vals)
	}
	if got := strings.Join(AxisKeys(fs), " "); got != "size mode inner.cpus opt.cpus pick.a.n pick.b.n" {
		t.Errorf("axis keys %s", got)
	}
	if i := InfoAt(fs, "size"); i == nil || i.NamePart("30") != "s30" || InfoAt(fs, "mode").NamePart("slow") != "slow" {
		t.Error("name parts")
	}
}

func TestDecodeErrors(t *testing.T) {
	for src, want := range map[string]string{
		"pick: {a: {}}\nsize: 0\n":           "f.yaml:2:7: size: 0 is below the minimum 1",
		"pick: {a: {}}\nsize: [5, 5]\n":      "f.yaml:2:11: size: value 5 listed twice; list each value once",
		"pick: {a: {}}\nwiat: 1s\n":          `f.yaml:2:1: unknown key "wiat"; did you mean wait? (allowed: size, wait, mode, inner, opt, items, pick)`,
		"pick: {a: {}}\nmode: quick\n":       `f.yaml:2:7: unknown mode "quick" (allowed: fast, slow, or leave it unset)`,
		"pick: {a: {}}\nwait: 5\n":           "f.yaml:2:7: wait: duration 5 has no unit; write 5s (Go duration: 500ms, 120s, 2m)",
		"pick: {a: {}}\nitems: [3]\n":        "f.yaml:2:9: items[0]: want a mapping such as {name: x}, got the integer 3",
		"pick: {a: {n: [1, 12]}}\n":          "f.yaml:1:19: pick.a.n: 12 is above the maximum 9",
		"size: 3\n":                          "f.yaml:1:1: pick: required; add one of a, b (e.g. pick: {a: {}})",
		"pick: {}\n":                         "f.yaml:1:7: pick: empty; add one of a, b (e.g. pick: {a: {}})",
		"pick: {c: {}}\n":                    `f.yaml:1:8: unknown key "c" in pick (allowed: a, b)`,
		"pick: {a: {}}\ninner: {cpus: x-}\n": `f.yaml:2:15: inner.cpus: bad CPU list "x-"; use CPU numbers and ranges such as 0, 0-3 or 0,2,4-5 (or none)`,
	} {
		_, _, err := decode(t, src)
		var se *Error
		if !errors.As(err, &se) || err.Error() != want || !errors.Is(err, fault.ErrInput) {
			t.Errorf("%q:\n got %v\nwant %s", src, err, want)
		}
	}
}

func TestReferenceRows(t *testing.T) {
	var d doc
	ref := Reference(d.Fields())
	for _, row := range []string{
		"| `size` | integer | `10` | bytes | yes | a size |",
		"| `wait` | duration | `1s` |  |  | a wait |",
		"| `mode` | (unset), `fast`, `slow` | unset |  | yes | a mode |",
		"| `inner` | mapping |  |  |  | inner |",
		"| `inner.cpus` | CPU list | `none` |  | yes | CPUs |",
		"| `opt` | mapping | off |  |  | optional |",
		"| `items[].name` | string | unset |  |  | a name |",
		"| `pick` | mapping | required |  |  | a choice |",
		"| `pick.b` | mapping | off |  |  | variant b |",
		"| `pick.b.n` | integer | `1` |  | yes | a number |",
	} {
		if !strings.Contains(ref, row+"\n") {
			t.Errorf("reference lacks %s\n%s", row, ref)
		}
	}
}

func TestPosErrorfFallsBackToParent(t *testing.T) {
	p := Pos{"a": {Line: 3, Column: 2}, "a.b": {Line: 0}}
	if got := p.Errorf("f", "a.b.c", "x").Error(); got != "f:3:2: x" {
		t.Errorf("got %q", got)
	}
	if got := p.Errorf("f", "z", "x").Error(); got != "f: x" {
		t.Errorf("got %q", got)
	}
}

func TestClone(t *testing.T) {
	v := &variant{N: 4}
	c := Clone[Fielder](v).(*variant)
	c.N = 5
	if v.N != 4 || c == v {
		t.Errorf("clone shares: %+v %+v", v, c)
	}
}

// A pin's cell name part is the one spelling the scenario's pin keys
// name cells with and the results store reads a benchfmt "vhost=0" back
// to: benchfmt names are a CI contract, so the spelling is pinned here.
func TestPinPart(t *testing.T) {
	for _, c := range []struct {
		stem string
		cpus []int
		want string
	}{
		{"vhost", []int{0}, "vhost-pin0"},
		{"vcpu", []int{0, 1, 4}, "vcpu-pin0-1,4"},
		{"gen", nil, "gen-unpinned"},
	} {
		if got := PinPart(c.stem, FormatCPUs(c.cpus)); got != c.want {
			t.Errorf("PinPart(%q, %v) = %q, want %q", c.stem, c.cpus, got, c.want)
		}
		var v []int
		if got := CPUs(&v, "k").Axis().Pin(c.stem).Info().NamePart(FormatCPUs(c.cpus)); got != c.want {
			t.Errorf("CPUs(...).Pin(%q) names %v %q, want %q", c.stem, c.cpus, got, c.want)
		}
	}
}
