package scenarios

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
)

func TestParseKernelSpec(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Kernel
	}{
		{"stock=debian:6.1", Kernel{Label: "stock", Debian: "6.1"}},
		{"stock=debian=6.1.0-47", Kernel{Label: "stock", Debian: "6.1.0-47"}},
		{"host=running", Kernel{Label: "host"}},
		{"p=image=/b/bzImage,modules=/b/lib/modules/6.1.0", Kernel{Label: "p", Image: "/b/bzImage", Modules: "/b/lib/modules/6.1.0"}},
		{"patched=tree=~/linux,ref=net-next/main,patches=~/v7/*.patch,patches=extra.patch,config=frag.config",
			Kernel{Label: "patched", Tree: "~/linux", Ref: "net-next/main", Patches: []string{"~/v7/*.patch", "extra.patch"}, Config: "frag.config"}},
		{"patched=source=debian:6.1,patches=series:tun-backpressure,config=frag.config",
			Kernel{Label: "patched", Source: "debian:6.1", Patches: []string{"series:tun-backpressure"}, Config: "frag.config"}},
	} {
		got, err := ParseKernelSpec(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.in, got, tc.want)
		}
		// Spec gives the same kernel back (the run inside a lab VM gets
		// the command line's kernels so).
		if again, err := ParseKernelSpec(got.Spec()); err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("%s: Spec %q parses as %+v, %v", tc.in, got.Spec(), again, err)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"stock", "want LABEL=SPEC"},
		{"=debian:6.1", "want LABEL=SPEC"},
		{"st ock=debian:6.1", "kernel label"},
		{"stock=debian:six", "Debian kernel version"},
		{"stock=tree=/l,ref=-x", "git ref"},
		{"stock=tree=/l,colour=blue", `unknown key "colour"`},
		{"stock=tree=/l,tree=/m", "tree given twice"},
		{"stock=image=/b,debian=6.1", "give image or debian"},
		{"stock=image=/b,tree=/l", "give one of image, debian or tree"},
		{"stock=debian=6.1,patches=x.patch", "patches belong to a source tree"},
		{"stock=modules=/m", "modules belong to an image"},
		{"stock=tree", "is not KEY=VALUE"},
		{"stock=source=6.1", "use debian:MAJOR.MINOR"},
		{"stock=source=debian:6.1.0-47", "use debian:MAJOR.MINOR"},
		{"stock=source=debian:6.1,tree=/l", "give one of image, debian, tree or source"},
		{"stock=source=debian:6.1,patches=series:nope", `no shipped series "nope"; known: tun-backpressure`},
	} {
		_, err := ParseKernelSpec(tc.in)
		if err == nil || !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "LABEL=tree=PATH") {
			t.Errorf("%s: %v; want an input error with %q and the syntax", tc.in, err, tc.want)
		}
	}
}

func TestSetKernels(t *testing.T) {
	s, err := Resolve("thread-pktgen")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetKernels([]Kernel{{Label: "a", Debian: "6.1"}, {Label: "a", Debian: "6.1"}}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("duplicate label: %v", err)
	}
	if err := s.SetKernels([]Kernel{{Label: "stock", Tree: "/l"}, {Label: "patched", Tree: "/l", Patches: []string{"/p"}}}); err != nil {
		t.Fatal(err)
	}
	cells := s.Expand()
	if len(cells) == 0 {
		t.Fatal("no cells")
	}
	seen := map[string]bool{}
	for _, c := range cells {
		if c.Kernel.Running() {
			t.Errorf("cell %s runs on the running kernel", c.Name)
		}
		seen[c.Kernel.Label] = true
	}
	if !seen["stock"] || !seen["patched"] || len(seen) != 2 {
		t.Errorf("labels %v", seen)
	}
}

// kernels[] entries with tree keys load with paths taken relative to the
// scenario file, and keys that belong to a tree are refused without one.
func TestKernelTreeKeys(t *testing.T) {
	const good = `name: k
kernels:
  - {label: stock, tree: linux}
  - {label: patched, tree: linux, ref: v6.1, patches: [series/*.patch], config: frag.config}
generator: {iperf3: {}}
`
	s, err := load("k.yaml", []byte(good), "/scen", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Kernel{Label: "patched", Tree: "/scen/linux", Ref: "v6.1", Patches: []string{"/scen/series/*.patch"}, Config: "/scen/frag.config"}
	if !reflect.DeepEqual(s.Kernels[1], want) {
		t.Errorf("kernel %+v, want %+v", s.Kernels[1], want)
	}
	// source: is no path; series:NAME is none either (not made relative).
	s, err = load("k.yaml", []byte("name: k\nkernels: [{label: p, source: \"debian:6.1\", patches: [\"series:tun-backpressure\", p.patch]}]\ngenerator: {iperf3: {}}\n"), "/scen", nil)
	if err != nil {
		t.Fatal(err)
	}
	want = Kernel{Label: "p", Source: "debian:6.1", Patches: []string{"series:tun-backpressure", "/scen/p.patch"}}
	if !reflect.DeepEqual(s.Kernels[0], want) || !s.Kernels[0].Builds() || s.Kernels[0].Running() {
		t.Errorf("kernel %+v, want %+v", s.Kernels[0], want)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"kernels: [{label: a, debian: \"6.1\", ref: main}]", "k.yaml:1:42: kernels[0]: ref belongs to a source tree"},
		{"kernels: [{label: a, image: /b, tree: /l}]", "kernels[0]: give one of image, debian or tree"},
		{"kernels: [{label: a, image: /b, config: f}]", "config belongs to a source tree"},
		{"kernels: [{label: a, tree: /l, ref: \"-rf\"}]", "git ref"},
		{"kernels: [{label: a, source: \"debian:6.1\", tree: /l}]", "kernels[0]: give one of image, debian, tree or source"},
		{"kernels: [{label: a, source: \"debian:6.1\", patches: [\"series:x\"]}]", `no shipped series "x"`},
		{"kernels: [{label: a, source: \"deb:6.1\"}]", "use debian:MAJOR.MINOR"},
		{"kernels: [{label: a, debian: \"6.1\", patches: [\"series:tun-backpressure\"]}]", "patches belong to a source tree; add tree: or source:"},
	} {
		_, err := Load("k.yaml", []byte(tc.yaml+"\ngenerator: {iperf3: {}}\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.yaml, err, tc.want)
		}
	}
}
