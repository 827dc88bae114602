package kbuild

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// A git format-patch mbox of a series (cover letter and two patches) gives
// one Patch per mail with a diff, named by file and mail, with subjects.
func TestReadPatchesMbox(t *testing.T) {
	second := strings.NewReplacer("1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222",
		"[PATCH net-next v2 1/1] tun: stop the queue\n instead of dropping", "[PATCH net-next v2 2/2] vhost_net: wake").Replace(tunPatch)
	cover := "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\nSubject: [PATCH net-next v2 0/2] backpressure\n\nCover letter, no diff.\n"
	dir := t.TempDir()
	mbox := writeFile(t, dir, "v2.mbox", cover+tunPatch+second)
	ps, err := ReadPatches([]string{mbox})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 {
		t.Fatalf("%d patches, want 2 (the cover letter has no diff)", len(ps))
	}
	if ps[0].Subject != "tun: stop the queue instead of dropping" || ps[1].Subject != "vhost_net: wake" {
		t.Errorf("subjects %q, %q", ps[0].Subject, ps[1].Subject)
	}
	if ps[0].Name() != mbox+", mail 2" || ps[1].Name() != mbox+", mail 3" {
		t.Errorf("names %q, %q", ps[0].Name(), ps[1].Name())
	}
	if ps[0].SHA256 == ps[1].SHA256 {
		t.Error("two different mails hash alike")
	}
	// A glob is expanded in name order; a single patch file is Part 0.
	writeFile(t, dir, "0002-b.patch", tunPatch)
	writeFile(t, dir, "0001-a.patch", tunPatch)
	ps, err = ReadPatches([]string{filepath.Join(dir, "*.patch")})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || filepath.Base(ps[0].File) != "0001-a.patch" || ps[0].Part != 0 || ps[0].Name() != ps[0].File {
		t.Errorf("glob: %+v", ps)
	}
	if _, err := ReadPatches([]string{dir}); !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
}

func TestHunkAndFiles(t *testing.T) {
	data, err := os.ReadFile(tunPatchFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := Files(data); !slices.Equal(got, []string{"drivers/net/tun.c"}) {
		t.Errorf("Files = %v", got)
	}
	if got, want := Hunk(data, "drivers/net/tun.c", 1130), "@@ -1130,13 +1234,30 @@ static netdev_tx_t tun_net_xmit(struct sk_buff *skb, struct net_device *dev)"; got != want {
		t.Errorf("Hunk = %q, want %q", got, want)
	}
	if got := Hunk(data, "drivers/net/tun.c", 1); got != "" {
		t.Errorf("Hunk of a line no hunk starts at = %q", got)
	}
	if got := Hunk(data, "drivers/net/tap.c", 1130); got != "" {
		t.Errorf("Hunk of another file = %q", got)
	}
	del := "diff --git a/x.c b/x.c\ndeleted file mode 100644\n--- a/x.c\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
	if got := Files([]byte(del)); !slices.Equal(got, []string{"x.c"}) {
		t.Errorf("Files of a deletion = %v", got)
	}
}

func TestFragment(t *testing.T) {
	f, err := MakeFragment("user.config", "# mine\nCONFIG_KVM=n\n# CONFIG_IPV6 is not set\nCONFIG_NR_CPUS=8\nCONFIG_LOCALVERSION=\"-x\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.Text, "# CONFIG_IPV6 is not set\n") || !strings.Contains(f.Text, "CONFIG_NR_CPUS=8\n") ||
		!strings.Contains(f.Text, "CONFIG_TUN=y\n") || strings.Contains(f.Text, "CONFIG_IPV6=y") {
		t.Errorf("the user's fragment does not win over the base:\n%s", f.Text)
	}
	cfg := ReadConfig("CONFIG_TUN=y\n# CONFIG_IPV6 is not set\nCONFIG_NR_CPUS=8\nCONFIG_LOCALVERSION=\"-x\"\nCONFIG_VHOST_NET=m\n")
	lost := f.Lost(cfg)
	if !slices.Contains(lost, "CONFIG_VHOST_NET=y (now m)") || !slices.Contains(lost, "CONFIG_NET_PKTGEN=y (gone: unknown here or its dependencies are off)") {
		t.Errorf("Lost = %v", lost)
	}
	for _, l := range lost {
		if strings.HasPrefix(l, "CONFIG_TUN=") || strings.HasPrefix(l, "CONFIG_IPV6=") || strings.HasPrefix(l, "CONFIG_KVM=") {
			t.Errorf("%s counted as lost", l)
		}
	}
	if _, err := MakeFragment("bad.config", "CONFIG_TUN=y\nTUN=y\n"); err == nil || !strings.Contains(err.Error(), "bad.config:2:") {
		t.Errorf("bad line: %v", err)
	}
	if _, err := ParseFragment("base.config", BaseConfig); err != nil {
		t.Errorf("the base config does not parse: %v", err)
	}
}

func TestProgressLine(t *testing.T) {
	for _, tc := range []struct {
		n, expect int
		el        time.Duration
		want      string
	}{
		{100, 1000, time.Minute, "100/1000 files, 1m0s, eta 9m0s"},
		{0, 1000, time.Second, "0/1000 files, 1s, eta unknown"},
		{1200, 1000, time.Minute, "1200 files compiled (expected 1000), 1m0s, eta soon"},
		{1, 0, 5 * time.Second, "1 file compiled, 5s"},
	} {
		if got := progressLine(tc.n, tc.expect, tc.el); got != tc.want {
			t.Errorf("progressLine(%d, %d, %v) = %q, want %q", tc.n, tc.expect, tc.el, got, tc.want)
		}
	}
}

func TestErrorLines(t *testing.T) {
	log := `  CC      drivers/net/tun.o
drivers/net/tun.c: In function 'tun_net_xmit':
drivers/net/tun.c:1240:17: error: 'full' undeclared (first use in this function)
 1240 |         if (backpressure && full)
      |                             ^~~~
drivers/net/tun.c:1240:17: note: each undeclared identifier is reported only once
make[3]: *** [scripts/Makefile.build:250: drivers/net/tun.o] Error 1
make[2]: *** [scripts/Makefile.build:500: drivers/net] Error 2
`
	got := errorLines(log)
	want := []string{"drivers/net/tun.c:1240:17: error: 'full' undeclared (first use in this function)",
		" 1240 |         if (backpressure && full)", "      |                             ^~~~",
		"drivers/net/tun.c:1240:17: note: each undeclared identifier is reported only once"}
	if !slices.Equal(got, want) {
		t.Errorf("errorLines =\n%q\nwant\n%q", got, want)
	}
	// make -j: another job's progress line lands between gcc's lines.
	mixed := "src/tun.c:1:2: error: #error here\n  CC      src/a.o\n  CC [M]  drivers/net/tap.o\n    1 | #error here\n  LD      vmlinux\nmake: *** [Makefile:9: src/tun.o] Error 1\n"
	if got, want := errorLines(mixed), []string{"src/tun.c:1:2: error: #error here", "    1 | #error here"}; !slices.Equal(got, want) {
		t.Errorf("errorLines with interleaved jobs =\n%q\nwant\n%q", got, want)
	}
	if got := errorLines("a\nb\nmake: *** [Makefile:1] Error 2\n"); len(got) != 3 {
		t.Errorf("no compiler error: want the last lines, got %q", got)
	}
}

// make deps installs every package Deps, SourceDeps and ModuleDeps name
// (xz-utils, of priority standard, is missing from a minimal Debian).
func TestMakefileInstallsDeps(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(mk), "\n") {
		if rest, ok := strings.CutPrefix(l, "KBUILD_PACKAGES := "); ok {
			line = rest
		}
	}
	have := strings.Fields(line)
	for _, p := range Packages(slices.Concat(Deps, SourceDeps, ModuleDeps)) {
		if !slices.Contains(have, p) {
			t.Errorf("the Makefile's KBUILD_PACKAGES lacks %s", p)
		}
	}
}
