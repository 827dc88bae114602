package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// plan --per-patch on lab-pktgen with the shipped split series: the
// columns are stock and one per prefix, each naming the patch it adds,
// and each a module build (the series touches only drivers/net/tun.c).
func TestPlanPerPatch(t *testing.T) {
	args := []string{"plan", "lab-pktgen", "--per-patch", "--kernel", "stock=source=debian:6.1",
		"--kernel", "patched=source=debian:6.1,patches=series:tun-backpressure-split",
		"--set", "backend=tap", "--set", "generator.pktgen.threads=1", "--set", "perf.stat.targets=[kpktgend]", "--seed", "7"}
	out, code := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		"overrides: --set per_patch=true --set backend=tap",
		"build: kernels stock, p1, p1-2, p1-3, p1-4 (debian:6.1): modules rebuilt for Debian's kernel",
		"per patch: 5 columns, one more patch each:",
		"  stock  the base\n         build: modules rebuilt for Debian's kernel (the build line above)",
		"  p1-3   + 0003-tun-stop-the-tx-queue-on-a-full-ring-instead-of-drop.patch (tun: stop the tx queue on a full ring instead of dropping)\n         build: modules rebuilt",
		"cells: 1 per kernel x 5 kernel(s) = 5",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	out, code = runCLI(t, append(args, "--format", "json")...)
	if code != 0 {
		t.Fatalf("json: exit %d:\n%s", code, out)
	}
	var p struct {
		PerPatch []planColumn `json:"per_patch"`
	}
	doc := out[strings.Index(out, "--- stdout\n")+len("--- stdout\n"):]
	if i := strings.Index(doc, "\n--- "); i >= 0 {
		doc = doc[:i]
	}
	if err := json.Unmarshal([]byte(doc), &p); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range p.PerPatch {
		got = append(got, c.Kernel+" "+c.Subject)
	}
	want := "stock |p1 tun: include net/sch_generic.h|p1-2 tun: produce into the tx ring through a helper that tells a full ring|p1-3 tun: stop the tx queue on a full ring instead of dropping|p1-4 tun: wake a tx queue that a detached ring left stopped"
	if strings.Join(got, "|") != want {
		t.Errorf("json columns %q", got)
	}
	// Without patches there is nothing to split: bad input, exit 2.
	if out, code := runCLI(t, "plan", "lab-pktgen", "--per-patch", "--kernel", "stock=source=debian:6.1"); code != 2 || !strings.Contains(out, "no kernel has patches") {
		t.Errorf("no series: exit %d: %s", code, out)
	}
}
