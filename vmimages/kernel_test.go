package vmimages

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
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
	cache := fakeDebianCache(t, []string{"6.1.0-9-amd64", "6.1.0-47-amd64", "6.1.0-50-cloud-amd64", "6.10.0-1-amd64",
		"6.12.9+deb12-amd64", "6.12.117+deb12-amd64", "6.12.115+deb12-cloud-amd64"}, []string{"6.1.0-60-amd64", "6.12.200+deb12-amd64"})
	for _, c := range []struct{ series, flavour, want string }{
		{"6.1", "amd64", "6.1.0-47"},
		{"6.1", "cloud-amd64", "6.1.0-50"},
		{"6.10", "amd64", "6.10.0-1"},
		{"6.12", "amd64", "6.12.117+deb12"},
		{"6.12", "cloud-amd64", "6.12.115+deb12"},
		{"6.12.9", "amd64", "6.12.9+deb12"},
		{"", "amd64", "6.12.117+deb12"},
	} {
		got, err := NewestDebianABI(t.Context(), c.series, c.flavour, cache)
		if err != nil || got != c.want {
			t.Errorf("%q %s: got %q, %v; want %q", c.series, c.flavour, got, err, c.want)
		}
	}
	// FetchDebianKernel reuses the newest cached package without apt.
	for v, rel := range map[string]string{
		"amd64":                "6.1.0-47-amd64", // DefaultDebianSeries, though 6.12 is cached
		"6.12-amd64":           "6.12.117+deb12-amd64",
		"6.12":                 "6.12.115+deb12-cloud-amd64", // DefaultDebianFlavour
		"6.1-amd64":            "6.1.0-47-amd64",
		"6.12.9+deb12-amd64":   "6.12.9+deb12-amd64",
		"6.1.0-50-cloud-amd64": "6.1.0-50-cloud-amd64",
	} {
		k, err := FetchDebianKernel(t.Context(), v, cache)
		if err != nil || k.Release != rel || k.Source != "debian:linux-image-"+rel+"-unsigned" {
			t.Errorf("FetchDebianKernel(%s) = %+v, %v; want release %s", v, k, err, rel)
		}
	}
	// CachedDebianKernel resolves alike and never downloads.
	if k, err := CachedDebianKernel(t.Context(), "6.12-amd64", cache); err != nil || k.Release != "6.12.117+deb12-amd64" {
		t.Errorf("CachedDebianKernel(6.12-amd64) = %+v, %v", k, err)
	}
	if _, err := CachedDebianKernel(t.Context(), "6.12.118+deb12-amd64", cache); !errors.Is(err, ErrNotFetched) || !strings.Contains(err.Error(), "linux-image-6.12.118+deb12-amd64-unsigned") {
		t.Errorf("CachedDebianKernel of an uncached ABI: err = %v, want ErrNotFetched naming the package", err)
	}
	for _, v := range []string{"6.12.117+bpo-amd64", "6", "6.12.117.1", "latest"} {
		_, err := FetchDebianKernel(t.Context(), v, cache)
		var ie *fault.InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "use a series") {
			t.Errorf("FetchDebianKernel(%s): err = %v, want an InputError naming the forms", v, err)
		}
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
	_, err := FetchDebianKernel(t.Context(), "rt-amd64", cache)
	var ie *fault.InputError
	if !errors.As(err, &ie) || err.Error() != "apt-cache not found, cannot pick a Debian kernel; pass --kernel debian:VERSION with a full ABI (e.g. 6.12.117+deb12) or --kernel PATH" {
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
		{"6.12.117+deb12", "6.12", "amd64", true},
		{"6.12.117+deb12", "6.1", "amd64", false},
		{"6.12.117+deb12", "6.12.117", "amd64", true},
		{"6.12.117+deb12", "6.12.11", "amd64", false},
		{"6.12.117+deb12-rt", "6.12", "amd64", false},
		{"6.1.0-47", "6.1.0", "amd64", true},
	} {
		if got := inSeries(c.abi, c.series, c.flavour); got != c.want {
			t.Errorf("inSeries(%q, %q, %q) = %v", c.abi, c.series, c.flavour, got)
		}
	}
}

func TestParseDebianABI(t *testing.T) {
	for in, want := range map[string]DebianABI{
		"6.1.0-47":       {Major: 6, Minor: 1, Patch: 0, Number: 47},
		"6.12.117+deb12": {Major: 6, Minor: 12, Patch: 117, Suite: "deb12"},
		"6.12.57+deb13":  {Major: 6, Minor: 12, Patch: 57, Suite: "deb13"},
		"5.10.0-35":      {Major: 5, Minor: 10, Patch: 0, Number: 35},
	} {
		got, err := ParseDebianABI(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("ParseDebianABI(%q) = %+v (%q), %v; want %+v", in, got, got.String(), err, want)
		}
	}
	for _, bad := range []string{"", "6.12", "6.12.117", "6.12.117+bpo", "6.12.117+deb12-amd64", "6.1.0-47-cloud", "6.1.0-", "v6.1.0-47", "6.12.117+deb", "6.1.0-99999999999999999999"} {
		if a, err := ParseDebianABI(bad); err == nil {
			t.Errorf("ParseDebianABI(%q) = %+v, want an error", bad, a)
		}
	}
	// Sorting mixes both schemes by upstream version, numerically.
	abis := []string{"6.12.117+deb12", "6.1.0-9", "6.12.9+deb12", "6.1.0-47", "6.12.107+deb12", "6.10.0-1"}
	slices.SortFunc(abis, func(a, b string) int {
		switch {
		case abiLess(a, b):
			return -1
		case abiLess(b, a):
			return 1
		}
		return 0
	})
	want := []string{"6.1.0-9", "6.1.0-47", "6.10.0-1", "6.12.9+deb12", "6.12.107+deb12", "6.12.117+deb12"}
	if !slices.Equal(abis, want) {
		t.Errorf("sorted %v, want %v", abis, want)
	}
}

// TestNewestInSearch picks from real `apt-cache search` output (Debian 12
// with bookworm-security, testdata/README.md): both ABI schemes, three
// flavours, and a series that does not exist.
func TestNewestInSearch(t *testing.T) {
	b, err := os.ReadFile("testdata/apt-cache-search-linux-image.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ series, flavour, want string }{
		{"6.12", "amd64", "6.12.117+deb12"},
		{"6.12", "cloud-amd64", "6.12.117+deb12"},
		{"6.12.113", "rt-amd64", "6.12.113+deb12"},
		{"6.1", "amd64", "6.1.0-57"},
		{"6.1", "cloud-amd64", "6.1.0-57"},
		{"", "cloud-amd64", "6.12.117+deb12"},
		{"6.13", "amd64", ""},
		{"6.12", "arm64", ""},
	} {
		if got := newestInSearch(string(b), c.series, c.flavour); got != c.want {
			t.Errorf("newestInSearch(%q, %q) = %q, want %q", c.series, c.flavour, got, c.want)
		}
	}
}
