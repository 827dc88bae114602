package vmimages

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// CheckCacheDir refuses a link at the name vnetbench chose under the
// cache home (XDG's, or ~/.cache) and follows the user's: the cache home
// itself and $VNETBENCH_CACHE.
func TestCheckCacheDir(t *testing.T) {
	home, other := t.TempDir(), t.TempDir()
	t.Setenv("VNETBENCH_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", home)
	os.Symlink(other, filepath.Join(home, ".cache")) // the user's cache home
	if err := CheckCacheDir(); err != nil || CacheDir() != filepath.Join(home, ".cache", "vnetbench") {
		t.Fatalf("%s: %v", CacheDir(), err)
	}
	os.Symlink(t.TempDir(), filepath.Join(other, "vnetbench"))
	err := CheckCacheDir()
	if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), filepath.Join(home, ".cache", "vnetbench")+" is a symbolic link") {
		t.Errorf("~/.cache/vnetbench a link: %v", err)
	}
	t.Setenv("VNETBENCH_CACHE", filepath.Join(other, "vnetbench"))
	if err := CheckCacheDir(); err != nil || CacheDir() != filepath.Join(other, "vnetbench") {
		t.Errorf("VNETBENCH_CACHE a link: %s, %v", CacheDir(), err)
	}
	t.Setenv("VNETBENCH_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", other)
	if err := CheckCacheDir(); !errors.Is(err, fault.ErrInput) {
		t.Errorf("$XDG_CACHE_HOME/vnetbench a link: %v", err)
	}
	if _, err := Build(t.Context(), BuildOptions{Kernel: "host"}); !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "set VNETBENCH_CACHE") {
		t.Errorf("Build in the default cache: %v", err)
	}
}
