package labvm

import (
	"context"
	"errors"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
)

func TestLabCmdline(t *testing.T) {
	for s, want := range map[string]bool{
		initCmdline("mitigations=off", "") + "\n":       true,
		"BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro quiet\n": false,
		"quiet -- vnetbench agent\n":                    false,
		"quiet --\n":                                    false,
		"":                                              false,
	} {
		if got := labCmdline(s); got != want {
			t.Errorf("labCmdline(%q) = %v, want %v", s, got, want)
		}
	}
}

// Outside a lab VM the nested guest is not booted: its QEMU would make
// the self-test's tap (vnbt0) in the host's own network namespace.
func TestSelfTestOutsideLabRefused(t *testing.T) {
	inLab = func() bool { return false }
	t.Cleanup(func() { inLab = InLab })
	c := SelfTestConfig{OutDir: t.TempDir(), consoles: map[string]bool{}}
	_, _, err := bootNestedVM(context.Background(), c, "tap", "", "")
	if !errors.Is(err, errNotInLab) || !errors.Is(err, fault.ErrInput) {
		t.Fatalf("bootNestedVM outside a lab: err = %v, want the in-lab refusal (bad input)", err)
	}
	if _, err := SelfTest(context.Background(), c); !errors.Is(err, errNotInLab) {
		t.Errorf("SelfTest outside a lab: err = %v, want the in-lab refusal", err)
	}
	if _, err := PerfStress(context.Background(), PerfStressConfig{}); !errors.Is(err, errNotInLab) {
		t.Errorf("PerfStress outside a lab: err = %v, want the in-lab refusal", err)
	}
}
