package vmimages

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

// fakeDebianCache unpacks empty stand-ins of Debian kernel packages
// (boot/vmlinuz-REL and lib/modules/REL) as FetchDebianKernel leaves them,
// and an incomplete one (a directory only) for each release in partial.
func fakeDebianCache(t *testing.T, releases, partial []string) string {
	t.Helper()
	cache := t.TempDir()
	for _, rel := range releases {
		root := filepath.Join(cache, "kernels", "debian", "linux-image-"+rel+"-unsigned")
		if err := os.MkdirAll(filepath.Join(root, "lib", "modules", rel), 0o755); err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(root, "boot"), 0o755)
		if err := os.WriteFile(filepath.Join(root, "boot", "vmlinuz-"+rel), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range partial {
		os.MkdirAll(filepath.Join(cache, "kernels", "debian", "linux-image-"+rel+"-unsigned"), 0o755)
	}
	return cache
}

// TestNewestDebianABI picks the newest completely unpacked package of a
// series and flavour from the cache (6.1 is not 6.10, the cloud flavour is
// not amd64) and says why when there is none.
func TestNewestDebianABI(t *testing.T) {
	cache := fakeDebianCache(t, []string{"6.1.0-9-amd64", "6.1.0-47-amd64", "6.1.0-50-cloud-amd64", "6.10.0-1-amd64"}, []string{"6.1.0-60-amd64"})
	for _, c := range []struct{ series, flavour, want string }{
		{"6.1", "amd64", "6.1.0-47"},
		{"6.1", "cloud-amd64", "6.1.0-50"},
		{"6.10", "amd64", "6.10.0-1"},
		{"", "amd64", "6.10.0-1"},
	} {
		got, err := NewestDebianABI(t.Context(), c.series, c.flavour, cache)
		if err != nil || got != c.want {
			t.Errorf("%q %s: got %q, %v; want %q", c.series, c.flavour, got, err, c.want)
		}
	}
	// FetchDebianKernel reuses the newest cached package without apt.
	k, err := FetchDebianKernel(t.Context(), "amd64", cache)
	if err != nil || k.Release != "6.10.0-1-amd64" || k.Source != "debian:linux-image-6.10.0-1-amd64-unsigned" {
		t.Errorf("FetchDebianKernel(amd64) = %+v, %v", k, err)
	}
	t.Run("apt", func(t *testing.T) {
		testenv.NeedCommand(t, "apt-cache", "apt")
		if _, err := NewestDebianABI(t.Context(), "2.9", "amd64", cache); !errors.Is(err, ErrNoDebianKernel) {
			t.Errorf("unknown series: err = %v, want ErrNoDebianKernel", err)
		}
	})
	t.Setenv("PATH", t.TempDir())
	if _, err := NewestDebianABI(t.Context(), "2.9", "amd64", cache); !errors.Is(err, ErrNoAPTCache) {
		t.Errorf("no apt-cache: err = %v, want ErrNoAPTCache", err)
	}
	_, err = FetchDebianKernel(t.Context(), "rt-amd64", cache)
	var ie *InputError
	if !errors.As(err, &ie) || err.Error() != "apt-cache not found, cannot pick a Debian kernel; pass --kernel debian:VERSION or --kernel PATH" {
		t.Errorf("FetchDebianKernel(rt-amd64) without apt-cache: err = %v", err)
	}
}

func TestInSeries(t *testing.T) {
	for _, c := range []struct {
		abi, series, flavour string
		want                 bool
	}{
		{"6.1.0-47", "6.1", "amd64", true},
		{"6.1.0-47", "", "amd64", true},
		{"6.10.0-1", "6.1", "amd64", false},
		{"6.1.0-50-cloud", "", "amd64", false}, // linux-image-6.1.0-50-cloud-amd64 is not amd64
		{"6.1", "", "amd64", false},
		{"6.12.12+bpo", "6.12", "amd64", false},
	} {
		if got := inSeries(c.abi, c.series, c.flavour); got != c.want {
			t.Errorf("inSeries(%q, %q, %q) = %v", c.abi, c.series, c.flavour, got)
		}
	}
}
