package runner

import (
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/scenarios"
)

func expandCells(t *testing.T, src string) []scenarios.Cell {
	t.Helper()
	s, err := scenarios.Load("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s.Expand()
}

// Doctor tells, from the releases alone, which cells will read n/a
// because their guest kernel is older than what their workload needs:
// sockmap cells on a Debian 6.1 guest (named, or the default guest on a
// host without a /boot image of its own, or inside a Debian lab VM), not
// on 6.12, not socat cells.
func TestGuestKernelNotes(t *testing.T) {
	const gen = "generator: {vsock: {transport: loopback, redirector: [socat, sockmap]}}\n"
	want := `tap/vsock-t1/sockmap reads n/a: guest kernel Debian 6.1 has no vsock sockmap (Linux 6.4+); set guest.kernel.debian to a newer series such as "6.12"`
	for _, tc := range []struct {
		name, src, want string
	}{
		{"debian 6.1 guest", "guest: {kernel: {debian: \"6.1\"}}\n" + gen, want},
		{"debian ABI 6.1.0-47", "guest: {kernel: {debian: \"6.1.0-47\"}}\n" + gen, strings.Replace(want, "Debian 6.1 ", "Debian 6.1.0-47 ", 1)},
		{"default guest", gen, want},
		{"lab kernel, default guest", "kernels: [{label: stock, debian: \"6.12\"}]\n" + gen, want},
		{"debian 6.12 guest", "guest: {kernel: {debian: \"6.12\"}}\n" + gen, ""},
		{"no sockmap cell", "guest: {kernel: {debian: \"6.1\"}}\ngenerator: {vsock: {redirector: socat}}\n", ""},
		{"no vsock", "generator: {iperf3: {}}\n", ""},
	} {
		got := strings.Join(guestKernelNotes(expandCells(t, tc.src), ""), "; ")
		if got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	// Doctor's line judges the default guest kernel.
	var line *Check
	for _, c := range guestFeatureChecks("") {
		if c.Name == "vsock sockmap" {
			line = &c
		}
	}
	if line == nil || line.OK || !line.Warn || line.Detail != "needs Linux 6.4+ in the guest; default guest kernel Debian 6.1 lacks it" ||
		!strings.Contains(line.Fix, "guest.kernel.debian: \"6.12\"") {
		t.Errorf("doctor line %+v", line)
	}
}

func TestLinuxVersion(t *testing.T) {
	for s, want := range map[string][2]int{"6.12.117+deb12-cloud-amd64": {6, 12}, "6.1.0-47": {6, 1}, "6.12": {6, 12}, "5.15": {5, 15}} {
		if ma, mi, ok := linuxVersion(s); !ok || ma != want[0] || mi != want[1] {
			t.Errorf("%q: %d.%d %v", s, ma, mi, ok)
		}
	}
	if _, _, ok := linuxVersion("amd64"); ok {
		t.Error("a flavour has no version")
	}
	k := guestKernel{major: 6, minor: 12, ok: true}
	if k.lacks("6.4") || !(guestKernel{major: 6, minor: 1, ok: true}).lacks("6.4") || !(guestKernel{major: 5, minor: 19, ok: true}).lacks("6.4") ||
		(guestKernel{}).lacks("6.4") {
		t.Error("lacks")
	}
}
