package nstest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/testenv"
)

const netns = Prefix("vnbnst")

func TestMain(m *testing.M) { netns.Main(m) }

// New names a namespace after the prefix and this process, a second one
// differently, and both are gone when the test that made them ends.
func TestNewDeletedAtCleanup(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces")
	var names []string
	t.Run("make", func(t *testing.T) {
		for _, ns := range []*hostnet.Netns{netns.New(t), netns.NoIPv6(t)} {
			names = append(names, ns.Name)
			if _, err := os.Stat(filepath.Join(hostnet.NetnsDir, ns.Name)); err != nil {
				t.Errorf("%s: %v", ns.Name, err)
			}
		}
	})
	want := fmt.Sprintf("vnbnst-%d-", os.Getpid())
	if len(names) != 2 || names[0] == names[1] || !strings.HasPrefix(names[0], want) || !strings.HasPrefix(names[1], want) {
		t.Fatalf("names %v, want two under %s", names, want)
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(hostnet.NetnsDir, n)); !os.IsNotExist(err) {
			t.Errorf("%s still there after its test ended (%v)", n, err)
		}
	}
}
