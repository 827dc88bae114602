package cpio

import (
	"bytes"
	"testing"
)

func TestRoundTripAndParents(t *testing.T) {
	var a Archive
	a.AddFile("/lib/modules/x/a.ko", 0o644, []byte("abc"))
	a.AddSymlink("bin/sh", "/init")
	a.AddCharDev("dev/console", 0o600, 5, 1)
	a.AddFile("init", 0o755, []byte("12345"))
	var buf bytes.Buffer
	if _, err := a.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if buf.Len()%4 != 0 {
		t.Errorf("archive length %d not 4-aligned", buf.Len())
	}
	got, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range got {
		names = append(names, e.Name)
	}
	want := []string{"bin", "bin/sh", "dev", "dev/console", "init", "lib", "lib/modules", "lib/modules/x", "lib/modules/x/a.ko"}
	if len(names) != len(want) {
		t.Fatalf("names %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("names %v, want %v", names, want)
		}
	}
	byName := map[string]Entry{}
	for _, e := range got {
		byName[e.Name] = e
	}
	if e := byName["lib/modules/x/a.ko"]; string(e.Data) != "abc" || e.Mode != TypeRegular|0o644 {
		t.Errorf("a.ko = %+v", e)
	}
	if e := byName["bin/sh"]; string(e.Data) != "/init" || e.Mode&typeMask != TypeSymlink {
		t.Errorf("bin/sh = %+v", e)
	}
	if e := byName["dev/console"]; e.Rmajor != 5 || e.Rminor != 1 {
		t.Errorf("dev/console = %+v", e)
	}
	if !byName["lib"].IsDir() {
		t.Errorf("lib is not a directory")
	}
}

// Insertion order must not matter: same entries, same bytes.
func TestReproducible(t *testing.T) {
	build := func(order []string) []byte {
		var a Archive
		for _, n := range order {
			a.AddFile(n, 0o644, []byte(n))
		}
		var buf bytes.Buffer
		if _, err := a.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	x := build([]string{"a/b", "c", "a/a"})
	y := build([]string{"c", "a/a", "a/b"})
	if !bytes.Equal(x, y) {
		t.Error("same entries in a different order gave different bytes")
	}
}

func TestReadRejectsGarbage(t *testing.T) {
	for _, in := range []string{"", "070707" + string(make([]byte, 104)), "070701zzzzzzzz" + string(make([]byte, 96))} {
		if _, err := Read(bytes.NewReader([]byte(in))); err == nil {
			t.Errorf("Read(%q...) = nil error", in[:min(len(in), 14)])
		}
	}
}
