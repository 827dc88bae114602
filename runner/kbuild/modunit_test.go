package kbuild

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
)

func TestFeeds(t *testing.T) {
	for f, want := range map[string]bool{
		"drivers/net/tun.c": true, "include/linux/skbuff.h": true, "arch/x86/kernel/cpu/bugs.c": true,
		"arch/arm64/kernel/setup.c": false, "Documentation/networking/tuntap.rst": false, "tools/testing/selftests/net/tun.c": false,
		"samples/pktgen/pktgen_sample01_simple.sh": false, "MAINTAINERS": false, "Makefile": true, "scripts/Makefile.build": false,
	} {
		if got := Feeds(f); got != want {
			t.Errorf("Feeds(%s) = %v, want %v", f, got, want)
		}
	}
}

// writeTree writes files (path -> content) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The include scan resolves <x/y.h> under include/ and arch/x86/include/,
// "y.h" next to its includer, and matches what it cannot resolve by the
// name's last element; the closure goes through headers, and chain names
// the widely included header a touched one reaches through.
func TestIncluders(t *testing.T) {
	tree := writeTree(t, map[string]string{
		"include/linux/ring.h":     "int ring;\n",
		"include/net/pool.h":       "#include <linux/ring.h>\n",
		"include/linux/skb.h":      "# include <net/pool.h>\n",
		"include/linux/other.h":    "int other;\n",
		"drivers/net/tun.c":        "#include <linux/skb.h>\n",
		"drivers/net/veth.c":       "#include <linux/ring.h>\n#include <linux/other.h>\n",
		"net/core/dev.c":           "#include <linux/skb.h>\n#include \"dev.h\"\n",
		"net/core/dev.h":           "int dev;\n",
		"net/core/sock.c":          "#include <linux/other.h>\n#include <linux/skb.h>\n",
		"net/core/skbuff.c":        "#include <linux/skb.h>\n",
		"drivers/x/ring_user.c":    "#include <ring.h>\n", // a -I directory: matched by name
		"tools/net/ring_test.c":    "#include <linux/ring.h>\n",
		"arch/arm64/kernel/ring.c": "#include <linux/ring.h>\n",
	})
	ix, err := scanIncludes(tree)
	if err != nil {
		t.Fatal(err)
	}
	got := ix.includers([]string{"include/linux/ring.h"})
	want := []string{"drivers/net/tun.c", "drivers/net/veth.c", "drivers/x/ring_user.c", "net/core/dev.c", "net/core/skbuff.c", "net/core/sock.c"}
	if !slices.Equal(got, want) {
		t.Errorf("includers of ring.h: %v, want %v", got, want)
	}
	if got := ix.includers([]string{"net/core/dev.h"}); !slices.Equal(got, []string{"net/core/dev.c"}) {
		t.Errorf("includers of net/core/dev.h: %v", got)
	}
	if c := ix.chain([]string{"include/linux/ring.h"}); c != "through include/net/pool.h, then include/linux/skb.h, which 4 files include" {
		t.Errorf("chain: %q", c)
	}
}

// readCmd takes what kbuild's .cmd file says: -DMODULE and KBUILD_MODNAME
// from the command, the source and its dependencies as tree paths (the
// side's sources and common headers), generated files and config stamps
// left out.
func TestReadCmd(t *testing.T) {
	dir := t.TempDir()
	s := &side{src: filepath.Join(dir, "src"), common: filepath.Join(dir, "headers/usr/src/linux-headers-6.1.0-57-common")}
	cmd := "cmd_" + s.src + "/drivers/vhost/net.i := gcc-12 -Wp,-MMD,x.d -nostdinc -O2 -DMODULE  -DKBUILD_BASENAME='\"net\"' -DKBUILD_MODNAME='\"vhost_net\"' -D__KBUILD_MODNAME=kmod_vhost_net -E -o net.i net.c\n\n" +
		"source_" + s.src + "/drivers/vhost/net.i := " + s.src + "/drivers/vhost/net.c\n\n" +
		"deps_" + s.src + "/drivers/vhost/net.i := \\\n" +
		"    $(wildcard include/config/VHOST_NET) \\\n" +
		"  " + s.common + "/include/linux/compiler-version.h \\\n" +
		"  include/generated/autoconf.h \\\n" +
		"  " + s.src + "/drivers/vhost/vhost.h \\\n" +
		"  " + s.common + "/include/linux/skb_array.h \\\n\n" +
		s.src + "/drivers/vhost/net.i: $(deps_x)\n"
	p := filepath.Join(s.src, "drivers/vhost/.net.i.cmd")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(cmd), 0o644); err != nil {
		t.Fatal(err)
	}
	oi, err := s.readCmd("drivers/vhost", "net.i")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"drivers/vhost/net.c", "include/linux/compiler-version.h", "drivers/vhost/vhost.h", "include/linux/skb_array.h"}
	if !oi.Module || oi.Name != "vhost_net" || !slices.Equal(oi.Deps, want) {
		t.Errorf("readCmd: %+v, want module vhost_net with deps %v", oi, want)
	}
	os.WriteFile(p, []byte(strings.Replace(cmd, " -DMODULE ", " ", 1)), 0o644)
	if oi, err := s.readCmd("drivers/vhost", "net.i"); err != nil || oi.Module {
		t.Errorf("without -DMODULE: %+v, %v", oi, err)
	}
}

// sameCode compares what the kernel runs: code and data with their
// relocations, not debug information or line numbers.
func TestSameCode(t *testing.T) {
	needTools(t, "gcc")
	dir := t.TempDir()
	compile := func(name, src string) string {
		c := filepath.Join(dir, name+".c")
		o := filepath.Join(dir, name+".o")
		os.WriteFile(c, []byte(src), 0o644)
		if out, err := exec.Command("gcc", "-O2", "-g", "-c", "-o", o, c).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v: %s", err, out)
		}
		return o
	}
	base := "extern int g(int);\nint table[4] = {1, 2, 3, 4};\nint f(int x) { return g(x) + table[x & 3]; }\n"
	a := compile("a", base)
	moved := compile("b", "\n\n/* a comment, and an unused helper */\nstatic inline int h(int x) { return x * 7; }\n"+base)
	calls := compile("c", strings.Replace(base, "g(x)", "g(x + 1)", 1))
	data := compile("d", strings.Replace(base, "3, 4}", "3, 5}", 1))
	callee := compile("e", strings.ReplaceAll(base, "g(", "k("))
	if diff, err := sameCode(a, moved); err != nil || diff != "" {
		t.Errorf("lines moved, an unused inline added: %q, %v; want the same code", diff, err)
	}
	for name, o := range map[string]string{"code": calls, "data": data, "callee": callee} {
		if diff, err := sameCode(a, o); err != nil || diff == "" {
			t.Errorf("%s changed: %q, %v; want a difference", name, diff, err)
		}
	}
}

// HeadersFor finds the release whose linux-headers package has the
// source's version, from apt's index.
func TestHeadersFor(t *testing.T) {
	outputs := map[string]string{
		"apt-cache pkgnames linux-headers-6.1": "linux-headers-6.1.0-56-amd64\nlinux-headers-6.1.0-57-amd64\nlinux-headers-6.1.0-57-cloud-amd64\nlinux-headers-6.1.0-57-common\nlinux-headers-6.12.48+deb12-amd64\n",
		"apt-cache madison linux-headers-6.1.0-56-amd64 linux-headers-6.1.0-57-amd64": "linux-headers-6.1.0-56-amd64 |  6.1.192-2 | http://deb.debian.org/debian-security bookworm-security/main amd64 Packages\n" +
			"linux-headers-6.1.0-57-amd64 |  6.1.192-3 | http://deb.debian.org/debian-security bookworm-security/main amd64 Packages\n",
	}
	fake := &proc.Fake{Handler: func(c proc.Cmd) (string, bool, error) {
		out, ok := outputs[strings.Join(c.Argv, " ")]
		if !ok {
			t.Errorf("unexpected command %v", c.Argv)
		}
		return out, true, nil
	}}
	for v, want := range map[string]string{"6.1.192-3": "6.1.0-57-amd64", "6.1.192-2": "6.1.0-56-amd64", "6.1.170-3": ""} {
		got, err := HeadersFor(context.Background(), fake, "6.1", v)
		if err != nil || got != want {
			t.Errorf("HeadersFor(6.1, %s) = %q, %v; want %q", v, got, err, want)
		}
	}
}

// The unpacked headers' Makefile points at the common headers beside it
// by a relative path, so a copy of the unpacked packages builds too.
func TestRelocateHeaders(t *testing.T) {
	root := writeTree(t, map[string]string{
		"usr/src/linux-headers-6.1.0-57-amd64/Makefile":  "include /usr/src/linux-headers-6.1.0-57-common/Makefile\n",
		"usr/src/linux-headers-6.1.0-57-common/Makefile": "# common\n",
	})
	if err := relocateHeaders(root, "linux-headers-6.1.0-57-amd64"); err != nil {
		t.Fatal(err)
	}
	kdir := filepath.Join(root, "usr/src/linux-headers-6.1.0-57-amd64")
	if got := readString(filepath.Join(kdir, "Makefile")); got != "include ../linux-headers-6.1.0-57-common/Makefile\n" {
		t.Errorf("Makefile: %q", got)
	}
	if c, err := commonDir(kdir); err != nil || c != filepath.Join(root, "usr/src/linux-headers-6.1.0-57-common") {
		t.Errorf("commonDir: %q, %v", c, err)
	}
	os.WriteFile(filepath.Join(kdir, "Makefile"), []byte("include /elsewhere/Makefile extra\n"), 0o644)
	if err := relocateHeaders(root, "linux-headers-6.1.0-57-amd64"); err == nil {
		t.Error("an unexpected Makefile was accepted")
	}
}

// A linux-source tree records its package version beside it; one fetched
// without it is told apart.
func TestSourceVersion(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "linux-source-6.1")
	if _, err := SourceVersion(dir); err == nil || !strings.Contains(err.Error(), "fetched by an older vnetbench") {
		t.Errorf("no version file: %v", err)
	}
	os.WriteFile(dir+".version", []byte("6.1.192-3\n"), 0o644)
	if v, err := SourceVersion(dir); v != "6.1.192-3" || err != nil {
		t.Errorf("SourceVersion = %q, %v", v, err)
	}
}

// probeObjs makes a directory's Makefile (or its Kbuild, kept) list the
// objects it builds; readObjs maps them to the tree.
func TestProbeObjs(t *testing.T) {
	tree := writeTree(t, map[string]string{
		"drivers/vhost/Makefile": "obj-$(CONFIG_VHOST_NET) += vhost_net.o\nvhost_net-y := net.o\n",
		"net/sched/Kbuild":       "obj-y += sch_generic.o\n",
	})
	s := &side{src: tree}
	for _, d := range []string{"drivers/vhost", "net/sched"} {
		if err := s.probeObjs(d); err != nil {
			t.Fatal(err)
		}
	}
	if kb := readString(filepath.Join(tree, "drivers/vhost/Kbuild")); !strings.HasPrefix(kb, "include "+filepath.Join(tree, "drivers/vhost/Makefile")+"\n$(obj)/vnb-objs.lds: FORCE") {
		t.Errorf("drivers/vhost/Kbuild: %q", kb)
	}
	if kb := readString(filepath.Join(tree, "net/sched/Kbuild")); !strings.HasPrefix(kb, "include "+filepath.Join(tree, "net/sched/.vnb-Kbuild")+"\n") ||
		readString(filepath.Join(tree, "net/sched/.vnb-Kbuild")) != "obj-y += sch_generic.o\n" {
		t.Errorf("net/sched/Kbuild: %q", kb)
	}
	os.WriteFile(filepath.Join(tree, "drivers/vhost/vnb-objs.lds"), []byte("y \nm "+tree+"/drivers/vhost/net.o "+tree+"/drivers/vhost/vhost.o\n"), 0o644)
	objs := map[string]string{}
	if err := s.readObjs("drivers/vhost", objs); err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs["drivers/vhost/net.o"] != "m" || objs["drivers/vhost/vhost.o"] != "m" {
		t.Errorf("objects %v", objs)
	}
}

// A patch whose file name leads out of the tree is refused before the
// side's copy of that file is removed: nothing outside the side's
// directory is removed.
func TestMakeSideRefusesNamesOutside(t *testing.T) {
	top := t.TempDir()
	victim := filepath.Join(top, "victim.c")
	os.WriteFile(victim, []byte("keep"), 0o644)
	dir := filepath.Join(top, "side")
	fake := &proc.Fake{Handler: func(c proc.Cmd) (string, bool, error) {
		t.Errorf("unexpected command %v", c.Argv)
		return "", true, nil
	}}
	// dir/src/drivers/../../../victim.c is top/victim.c.
	_, err := sideMaker{exec: fake}.makeSide(t.Context(), dir, t.TempDir(), &Headers{}, nil, []string{"drivers/../../../victim.c"}, nil)
	if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "outside the kernel tree") {
		t.Errorf("makeSide = %v; want the name refused", err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
		t.Errorf("%s removed or changed: %q, %v", victim, b, err)
	}
}
