package scenarios

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPerPatchSplitSeries(t *testing.T) {
	ks := []Kernel{
		{Label: "stock", Source: "debian:6.1"},
		{Label: "patched", Source: "debian:6.1", Patches: []string{"series:tun-backpressure-split"}},
	}
	got, err := PerPatch(ks)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, k := range got {
		labels = append(labels, k.Label)
		if k.Source != "debian:6.1" {
			t.Errorf("%s: source %q", k.Label, k.Source)
		}
	}
	if want := []string{"stock", "p1", "p1-2", "p1-3", "p1-4"}; !slices.Equal(labels, want) {
		t.Fatalf("labels %v, want %v", labels, want)
	}
	if len(got[0].Patches) != 0 {
		t.Errorf("base has patches %v", got[0].Patches)
	}
	last := got[4].Patches
	if len(last) != 4 || last[2] != "series:tun-backpressure-split/0003-tun-stop-the-tx-queue-on-a-full-ring-instead-of-drop.patch" {
		t.Fatalf("whole series = %v", last)
	}
	for n, k := range got[1:] {
		if !slices.Equal(k.Patches, last[:n+1]) {
			t.Errorf("%s = %v, want the first %d of %v", k.Label, k.Patches, n+1, last)
		}
		// Each entry names one shipped patch: it checks, and reads as
		// one patch.
		for _, p := range k.Patches {
			if msg := checkPatchPath(p, "patches"); msg != "" {
				t.Errorf("%s: %s", p, msg)
			}
			name, _ := SeriesName(p)
			ps, err := SeriesPatches(name)
			if err != nil || len(ps) != 1 || !strings.HasPrefix(string(ps[0].Data), "From ") {
				t.Errorf("%s: %d patches, %v", p, len(ps), err)
			}
		}
	}
	if msg := checkPatchPath("series:tun-backpressure-split/0009-nope.patch", "patches"); msg == "" {
		t.Error("a patch the series lacks checked fine")
	}
}

func TestPerPatchGlobAndBase(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"0002-b.patch", "0001-a.patch", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ks := []Kernel{{Label: "v7", Tree: "/src/linux", Ref: "net-next", Patches: []string{filepath.Join(dir, "*.patch"), "/extra/fix.patch"}}}
	got, err := PerPatch(ks)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Label != "base" || got[0].Tree != "/src/linux" || got[0].Ref != "net-next" {
		t.Errorf("base = %+v", got[0])
	}
	want := []string{filepath.Join(dir, "0001-a.patch"), filepath.Join(dir, "0002-b.patch"), "/extra/fix.patch"}
	if len(got) != 4 || !slices.Equal(got[3].Patches, want) || got[3].Label != "p1-3" {
		t.Fatalf("got %+v, want the last column with %v", got, want)
	}
	if _, err := PerPatch([]Kernel{{Label: "stock", Source: "debian:6.1"}}); err == nil || !strings.Contains(err.Error(), "no kernel has patches") {
		t.Errorf("no patches: %v", err)
	}
	if _, err := PerPatch([]Kernel{{Label: "x", Tree: "/src", Patches: []string{filepath.Join(dir, "*.diff")}}}); err == nil {
		t.Error("a glob matching nothing expanded")
	}
}
