package hostnet

import (
	"os"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

// KernelRelease is uname -r, which /proc/sys/kernel/osrelease shows too.
func TestKernelRelease(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		testenv.NotApplicable(t, "no /proc/sys/kernel/osrelease to compare with: "+err.Error())
	}
	got, err := KernelRelease()
	if want := strings.TrimSpace(string(b)); err != nil || got != want {
		t.Errorf("KernelRelease() = %q, %v; want %q", got, err, want)
	}
}
