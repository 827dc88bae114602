package kbuild

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles writes files (path relative to root: content) under root.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, data := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// An unversioned linux-source tree takes the headers' version when every
// file of the common headers is the tree's, and records it; a file that
// differs or is missing leaves it unversioned with the reason naming the
// file.
func TestAdoptVersion(t *testing.T) {
	top := "VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 192\nEXTRAVERSION =\n"
	common := map[string]string{"Makefile": top, "include/linux/ptr_ring.h": "ring\n", "drivers/net/Kconfig": "config TUN\n"}
	for name, c := range map[string]struct {
		tree   map[string]string
		differ string
	}{
		"same":    {tree: map[string]string{"Makefile": top, "include/linux/ptr_ring.h": "ring\n", "drivers/net/Kconfig": "config TUN\n", "drivers/net/tun.c": "tun\n"}},
		"differs": {tree: map[string]string{"Makefile": top, "include/linux/ptr_ring.h": "ring v2\n", "drivers/net/Kconfig": "config TUN\n"}, differ: "include/linux/ptr_ring.h"},
		"missing": {tree: map[string]string{"Makefile": top, "include/linux/ptr_ring.h": "ring\n"}, differ: "drivers/net/Kconfig"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			tree := filepath.Join(dir, "src", "linux-source-6.1")
			writeFiles(t, tree, c.tree)
			h := &Headers{Release: "6.1.0-57-amd64", Version: "6.1.192-3", Root: filepath.Join(dir, "headers")}
			writeFiles(t, filepath.Join(h.Root, "usr", "src", "linux-headers-6.1.0-57-common"), common)
			if got := treeRelease(tree); got != "6.1.192" || upstreamOf("6.1.192-3") != got {
				t.Fatalf("tree release %q, upstream of 6.1.192-3 %q", got, upstreamOf("6.1.192-3"))
			}
			why, err := adoptVersion(tree, "6.1.192-3", h)
			if err != nil {
				t.Fatal(err)
			}
			v, verr := SourceVersion(tree)
			if c.differ == "" {
				if why != "" || verr != nil || v != "6.1.192-3" {
					t.Errorf("reason %q, recorded %q (%v); want 6.1.192-3", why, v, verr)
				}
				return
			}
			if !strings.Contains(why, c.differ) || verr == nil {
				t.Errorf("reason %q (want it to name %s), recorded %q", why, c.differ, v)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "src", ".version-*")); len(left) != 0 {
				t.Errorf("left behind %v", left)
			}
		})
	}
}
