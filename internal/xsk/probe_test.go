package xsk

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/workload"
)

func TestProbe(t *testing.T) {
	needHost(t)
	c, err := Probe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("AF_XDP on a tap: %s", c)
	if errors.Is(c.CopyErr, ErrNoAFXDP) {
		testenv.Skipf(t, "%v", c.CopyErr)
	}
	if !c.Copy || c.CopyErr != nil {
		t.Errorf("copy bind on a tap: %v (every kernel with AF_XDP does it)", c.CopyErr)
	}
	if c.ZeroCopy {
		testenv.NotApplicable(t, "this kernel's tun binds zero-copy (a patched kernel)")
	}
	if _, ok := workload.IsUnsupported(c.ZeroCopyErr); !ok {
		t.Errorf("zerocopy: %v, want a *workload.UnsupportedError", c.ZeroCopyErr)
	}
	if want := "copy ok, zerocopy unsupported (EOPNOTSUPP: this kernel's tun has no AF_XDP zero-copy)"; c.String() != want {
		t.Errorf("String() = %q, want %q", c.String(), want)
	}
	if slices.ContainsFunc(hostnet.Leftovers(), func(s string) bool {
		return strings.HasPrefix(s, fmt.Sprintf("vnbprobe-%d-", os.Getpid()))
	}) {
		t.Errorf("probe left its namespace: %v", hostnet.Leftovers())
	}
}
