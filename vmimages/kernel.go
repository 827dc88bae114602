package vmimages

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/safefs"
)

// Kernel is a guest kernel image with its modules directory.
type Kernel struct {
	Image   string // bzImage path
	Modules string // the /lib/modules/<release> directory ("" = no modules)
	Release string // e.g. "6.1.0-50-cloud-amd64"
	Source  string // "explicit", "host" or "debian:<package>"
}

// DefaultDebianFlavour is the Debian kernel flavour used when a Debian
// kernel is requested without one. The cloud flavour is LZ4-compressed and
// reaches /init about 3x sooner under TCG than the generic (XZ) flavour, and
// has every module vnetbench needs (virtio_net, tun, vhost_net, pktgen).
const DefaultDebianFlavour = "cloud-amd64"

// DefaultDebianSeries is the Debian kernel series used when a Debian kernel
// is requested without a version ("debian", "debian:amd64"): the one every
// measurement so far was made on. Newer series (6.12, from
// bookworm-security) are used only when named, so a default guest does not
// change kernel when a newer package appears in apt or in the cache.
const DefaultDebianSeries = "6.1"

// The cache's subdirectories that building and booting a guest image write
// (Build, PVHKernel); kernels are fetched into kernels/ before.
const (
	initramfsCache = "initramfs"
	vmlinuxCache   = "vmlinux"
)

// ImageCacheEnv names a writable directory where Build and PVHKernel
// write the images they make when the cache is read-only: a lab VM sees
// the host's cache read-only (a kernel under test must not replace the
// image the next run boots) and sets it to a directory of its own. They
// look in the cache first, then there.
const ImageCacheEnv = "VNETBENCH_IMAGE_CACHE"

// imageDirs are where the images of kind (initramfsCache, vmlinuxCache)
// are looked for, in order, and the one new ones are written to.
func imageDirs(cache, kind string) (look []string, write string) {
	look = []string{filepath.Join(cache, kind)}
	write = look[0]
	if d := os.Getenv(ImageCacheEnv); d != "" {
		write = filepath.Join(d, kind)
		look = append(look, write)
	}
	return look, write
}

// CacheDir returns the shared cache directory: $VNETBENCH_CACHE, else
// $XDG_CACHE_HOME/vnetbench, else ~/.cache/vnetbench.
func CacheDir() string {
	base, rel := cacheHome()
	if rel == "" {
		return base
	}
	return filepath.Join(base, rel)
}

// cacheHome is CacheDir as the user's part and vnetbench's: base is
// $VNETBENCH_CACHE (rel empty), $XDG_CACHE_HOME or ~/.cache (XDG's cache
// home, the user's as $XDG_CACHE_HOME is), else the temporary directory;
// rel is the name vnetbench chose under it.
func cacheHome() (base, rel string) {
	if d := os.Getenv("VNETBENCH_CACHE"); d != "" {
		return d, ""
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return d, "vnetbench"
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache"), "vnetbench"
	}
	return os.TempDir(), "vnetbench-cache"
}

// CheckCacheDir refuses, as bad input, a CacheDir whose name vnetbench
// chose (vnetbench under the cache home, vnetbench-cache under the
// temporary directory) is a symbolic link: root would write the cache
// wherever a planted link points. $VNETBENCH_CACHE and the cache home are
// the user's, followed as given.
func CheckCacheDir() error {
	base, rel := cacheHome()
	if rel == "" {
		return nil
	}
	return safefs.ChosenLink(base, rel, "set VNETBENCH_CACHE to the directory to use")
}

// FindKernel resolves a kernel spec: a bzImage path (with modulesDir, or
// /lib/modules/<release> derived from the image's version string), "host"
// (/boot/vmlinuz-$(uname -r)), "debian" or "debian:VERSION" (see
// FetchDebianKernel). An empty spec tries the host kernel, then Debian's.
func FindKernel(ctx context.Context, spec, modulesDir, cacheDir string) (*Kernel, error) {
	switch {
	case spec == "":
		if k, err := hostKernel(); err == nil {
			return k, nil
		}
		return FetchDebianKernel(ctx, "", cacheDir)
	case spec == "host":
		return hostKernel()
	case spec == "debian":
		return FetchDebianKernel(ctx, "", cacheDir)
	case strings.HasPrefix(spec, "debian:"):
		return FetchDebianKernel(ctx, strings.TrimPrefix(spec, "debian:"), cacheDir)
	}
	return explicitKernel(spec, modulesDir, "explicit")
}

func hostKernel() (*Kernel, error) {
	rel, err := hostnet.KernelRelease()
	if err != nil {
		return nil, err
	}
	img := "/boot/vmlinuz-" + rel
	mods := "/lib/modules/" + rel
	if _, err := os.Stat(img); err != nil {
		return nil, inputErrorf(nil, "host kernel image %s not found; pass --kernel PATH or --kernel debian", img)
	}
	if _, err := os.Stat(mods); err != nil {
		return nil, inputErrorf(nil, "host kernel modules %s not found; pass --kernel PATH --modules DIR or --kernel debian", mods)
	}
	return explicitKernel(img, mods, "host")
}

func explicitKernel(image, modulesDir, source string) (*Kernel, error) {
	rel, err := KernelRelease(image)
	if err != nil {
		return nil, err
	}
	if modulesDir == "" {
		if d := "/lib/modules/" + rel; dirExists(d) {
			modulesDir = d
		}
	}
	if modulesDir != "" && !dirExists(modulesDir) {
		return nil, inputErrorf(nil, "modules directory %s does not exist; pass --modules with the kernel's /lib/modules/<release> directory", modulesDir)
	}
	return &Kernel{Image: image, Modules: modulesDir, Release: rel, Source: source}, nil
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// KernelRelease reads the release string ("6.1.0-50-cloud-amd64") from an
// x86 bzImage's setup header. It fails with bad input (fault.ErrInput) when the file is
// missing or is not a bzImage.
func KernelRelease(image string) (string, error) {
	f, err := os.Open(image)
	if err != nil {
		return "", inputErrorf(nil, "kernel image %s: %v; pass --kernel with a bzImage path, or --kernel debian", image, errors.Unwrap(err))
	}
	defer f.Close()
	hdr := make([]byte, 0x10000)
	n, _ := io.ReadFull(f, hdr)
	hdr = hdr[:n]
	if n < 0x210 || string(hdr[0x202:0x206]) != "HdrS" {
		return "", inputErrorf(nil, "kernel image %s is not an x86 bzImage (no HdrS setup header); pass arch/x86/boot/bzImage or /boot/vmlinuz-*", image)
	}
	off := int(binary.LittleEndian.Uint16(hdr[0x20e:0x210])) + 0x200
	if off >= n {
		return "", inputErrorf(nil, "kernel image %s: version string offset %#x out of range", image, off)
	}
	s := hdr[off:]
	if i := bytes.IndexAny(s, " \x00"); i >= 0 {
		s = s[:i]
	}
	if len(s) == 0 {
		return "", inputErrorf(nil, "kernel image %s has an empty version string", image)
	}
	return string(s), nil
}

// FetchDebianKernel downloads Debian's linux-image-VERSION-unsigned package
// with `apt-get download` into cacheDir/kernels and unpacks it with
// `dpkg-deb -x` (the only external programs this package runs). VERSION is
// an ABI with flavour ("6.1.0-50-cloud-amd64", "6.12.117+deb12-amd64"), an
// ABI alone ("6.1.0-50", "6.12.117+deb12": DefaultDebianFlavour), a series
// ("6.12", "6.1": its newest ABI, see NewestDebianABI), a series with
// flavour ("6.12-amd64"), a flavour alone ("amd64", "cloud-amd64": newest
// ABI) or empty (newest ABI, default flavour). An unpacked package is
// reused without network access.
func FetchDebianKernel(ctx context.Context, version, cacheDir string) (*Kernel, error) {
	return debianKernel(ctx, version, cacheDir, true)
}

// ErrNotFetched is CachedDebianKernel's error (wrapped) for a package that
// is not unpacked in the cache.
var ErrNotFetched = errors.New("kernel package not fetched yet")

// CachedDebianKernel resolves VERSION as FetchDebianKernel does but never
// downloads: the package must already be unpacked in cacheDir, else the
// error wraps ErrNotFetched. For checks (doctor) that must not fetch 70 MB.
func CachedDebianKernel(ctx context.Context, version, cacheDir string) (*Kernel, error) {
	return debianKernel(ctx, version, cacheDir, false)
}

// DebianKernelCached reports whether the package VERSION names (as
// FetchDebianKernel reads it; a series: its newest unpacked ABI) is
// unpacked in cacheDir ("" = CacheDir()), so that fetching it runs
// neither apt-get nor dpkg-deb. It asks apt nothing.
func DebianKernelCached(version, cacheDir string) bool {
	p, err := resolveDebian(context.Background(), version, cacheDir, false)
	if err != nil {
		return false
	}
	_, err = unpackedKernel(p.dir, p.rel, p.pkg)
	return err == nil
}

// debianPackage is a Debian kernel package in the cache: its release
// (ABI-flavour) and flavour, its name, and the directory it is unpacked
// into under root (kernels/debian).
type debianPackage struct{ rel, flavour, pkg, dir, root string }

// resolveDebian reads VERSION as FetchDebianKernel does: an ABI as
// given, a series as its newest ABI in the cache, else (askAPT) apt's.
func resolveDebian(ctx context.Context, version, cacheDir string, askAPT bool) (debianPackage, error) {
	if cacheDir == "" {
		cacheDir = CacheDir()
	}
	abi, flavour := splitDebianVersion(version)
	root := filepath.Join(cacheDir, "kernels", "debian")
	if _, err := ParseDebianABI(abi); err != nil {
		if abi, err = debianSeriesABI(ctx, version, abi, flavour, cacheDir, askAPT); err != nil {
			return debianPackage{}, err
		}
	}
	rel := abi + "-" + flavour
	pkg := "linux-image-" + rel + "-unsigned"
	return debianPackage{rel: rel, flavour: flavour, pkg: pkg, dir: filepath.Join(root, pkg), root: root}, nil
}

// debianSeriesABI is the newest ABI of series ("" = DefaultDebianSeries)
// and flavour: the cache's, else (askAPT) apt's.
func debianSeriesABI(ctx context.Context, version, series, flavour, cacheDir string, askAPT bool) (string, error) {
	if series == "" {
		series = DefaultDebianSeries
	}
	if !IsDebianSeries(series) {
		return "", inputErrorf(nil, "Debian kernel version %q: use a series (\"6.12\", \"6.1\"), an ABI (\"6.12.117+deb12\", \"6.1.0-47\"), optionally followed by a flavour (\"-amd64\", \"-cloud-amd64\")", version)
	}
	if !askAPT {
		if abi := newestCached(filepath.Join(cacheDir, "kernels", "debian"), series, flavour); abi != "" {
			return abi, nil
		}
		return "", fmt.Errorf("linux-image-%s*-%s-unsigned: %w", series, flavour, ErrNotFetched)
	}
	abi, err := NewestDebianABI(ctx, series, flavour, cacheDir)
	switch {
	case errors.Is(err, ErrNoAPTCache):
		return "", inputErrorf(nil, "apt-cache not found, cannot pick a Debian kernel; pass --kernel debian:VERSION with a full ABI (e.g. 6.12.117+deb12) or --kernel PATH")
	case errors.Is(err, ErrNoDebianKernel):
		return "", inputErrorf(nil, "no linux-image-%s*-%s-unsigned package cached or known to apt; run apt-get update (Debian 12's 6.12 kernels come from bookworm-security), or pass --kernel PATH", series, flavour)
	}
	return abi, err
}

func debianKernel(ctx context.Context, version, cacheDir string, fetch bool) (*Kernel, error) {
	p, err := resolveDebian(ctx, version, cacheDir, true)
	if err != nil {
		return nil, err
	}
	rel, flavour, pkg, dir, root := p.rel, p.flavour, p.pkg, p.dir, p.root
	if k, err := unpackedKernel(dir, rel, pkg); err == nil {
		return k, nil
	}
	if !fetch {
		return nil, fmt.Errorf("%s: %w", pkg, ErrNotFetched)
	}
	if _, err := proc.LookPath("apt-get"); err != nil {
		return nil, inputErrorf(nil, "apt-get not found, cannot fetch %s; pass --kernel PATH --modules DIR instead", pkg)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(root, ".fetch-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	deb, err := AptDownload(ctx, proc.Real{}, tmp, pkg)
	if err != nil {
		return nil, inputErrorf(nil, "%v; check the version (apt-cache search linux-image-%s) or pass --kernel PATH", err, flavour)
	}
	unpack := filepath.Join(tmp, "root")
	if _, err := (proc.Real{}).Run(ctx, proc.Cmd{Argv: []string{"dpkg-deb", "-x", deb, unpack}}); err != nil {
		return nil, err
	}
	if err := os.Rename(unpack, dir); err != nil && !dirExists(dir) {
		return nil, fmt.Errorf("install %s into the cache: %w", pkg, err)
	}
	return unpackedKernel(dir, rel, pkg)
}

func unpackedKernel(dir, rel, pkg string) (*Kernel, error) {
	img := filepath.Join(dir, "boot", "vmlinuz-"+rel)
	mods := filepath.Join(dir, "lib", "modules", rel)
	if _, err := os.Stat(img); err != nil {
		return nil, err
	}
	if !dirExists(mods) {
		return nil, fmt.Errorf("%s: no modules directory", dir)
	}
	return &Kernel{Image: img, Modules: mods, Release: rel, Source: "debian:" + pkg}, nil
}

func splitDebianVersion(v string) (abi, flavour string) {
	flavour = DefaultDebianFlavour
	for _, fl := range []string{"cloud-amd64", "rt-amd64", "amd64"} {
		if v == fl {
			return "", fl
		}
		if strings.HasSuffix(v, "-"+fl) {
			return strings.TrimSuffix(v, "-"+fl), fl
		}
	}
	return v, flavour
}

// DebianABI is the ABI part of a Debian kernel release, which names the
// package, /boot/vmlinuz-ABI-FLAVOUR and /lib/modules/ABI-FLAVOUR. Debian
// has used two schemes: "6.1.0-47" (upstream major.minor.0, then an ABI
// number Debian raises on ABI changes; up to 6.1) and "6.12.117+deb12"
// (the full upstream version, then the Debian release it is built for;
// from 6.12 on, bookworm-security included).
type DebianABI struct {
	Major, Minor, Patch int
	Number              int    // the "-N" ABI number of the old scheme (0 in the new)
	Suite               string // "deb12" in the new scheme ("" in the old)
}

// ParseDebianABI parses "6.1.0-47" or "6.12.117+deb12". Anything else
// (a series, a flavour, a backport's "+bpo") is an error.
func ParseDebianABI(s string) (DebianABI, error) {
	m := debianABIRe().FindStringSubmatch(s)
	if m == nil {
		return DebianABI{}, fmt.Errorf("kernel ABI %q: want MAJOR.MINOR.PATCH-N (6.1.0-47) or MAJOR.MINOR.PATCH+debN (6.12.117+deb12)", s)
	}
	var a DebianABI
	var err error
	for i, p := range []*int{&a.Major, &a.Minor, &a.Patch} {
		if *p, err = strconv.Atoi(m[i+1]); err != nil {
			return DebianABI{}, fmt.Errorf("kernel ABI %q: %w", s, err)
		}
	}
	if m[4] != "" {
		if a.Number, err = strconv.Atoi(m[4]); err != nil {
			return DebianABI{}, fmt.Errorf("kernel ABI %q: %w", s, err)
		}
	}
	a.Suite = m[5]
	return a, nil
}

var debianABIRe = lazyre.New(`^([0-9]{1,4})\.([0-9]{1,4})\.([0-9]{1,6})(?:-([0-9]{1,6})|\+(deb[0-9]{1,4}))$`)

// String is the ABI as Debian writes it.
func (a DebianABI) String() string {
	if a.Suite != "" {
		return fmt.Sprintf("%d.%d.%d+%s", a.Major, a.Minor, a.Patch, a.Suite)
	}
	return fmt.Sprintf("%d.%d.%d-%d", a.Major, a.Minor, a.Patch, a.Number)
}

// Less orders ABIs by upstream version, then ABI number, then suite.
func (a DebianABI) Less(b DebianABI) bool {
	for _, d := range [][2]int{{a.Major, b.Major}, {a.Minor, b.Minor}, {a.Patch, b.Patch}, {a.Number, b.Number}} {
		if d[0] != d[1] {
			return d[0] < d[1]
		}
	}
	return a.Suite < b.Suite
}

// InSeries reports whether a belongs to series: "6.12" holds every 6.12.x
// (but not 6.1.x), "6.12.117" holds 6.12.117+deb12, "6.1.0" holds 6.1.0-47;
// "" holds all.
func (a DebianABI) InSeries(series string) bool {
	if series == "" {
		return true
	}
	if !IsDebianSeries(series) {
		return false
	}
	parts := strings.Split(series, ".")
	have := []int{a.Major, a.Minor, a.Patch}
	for i, p := range parts {
		if n, _ := strconv.Atoi(p); n != have[i] {
			return false
		}
	}
	return true
}

// IsDebianSeries reports whether s names a kernel series rather than one
// ABI: "6.12", "6.1" or "6.12.117".
func IsDebianSeries(s string) bool { return seriesRe().MatchString(s) }

var seriesRe = lazyre.New(`^[0-9]{1,4}\.[0-9]{1,4}(\.[0-9]{1,6})?$`)

func abiLess(a, b string) bool {
	pa, ea := ParseDebianABI(a)
	pb, eb := ParseDebianABI(b)
	if ea != nil || eb != nil {
		return a < b
	}
	return pa.Less(pb)
}

// Errors of NewestDebianABI (wrapped), so that a caller words its own fix.
var (
	// ErrNoAPTCache: nothing suitable is cached and apt-cache is not installed.
	ErrNoAPTCache = errors.New("apt-cache not found")
	// ErrNoDebianKernel: no package of the series and flavour is cached or
	// known to apt.
	ErrNoDebianKernel = errors.New("no such Debian kernel package cached or known to apt")
)

// NewestDebianABI returns the newest ABI ("6.1.0-47", "6.12.117+deb12") of
// Debian's linux-image-ABI-FLAVOUR-unsigned packages in a kernel series:
// series "6.1" matches 6.1.0-47 but not 6.10.0-1 or 6.12.117+deb12;
// "6.12.117" matches 6.12.117+deb12; "" matches any. It picks among
// the packages unpacked in cacheDir (as FetchDebianKernel leaves them) when
// there is one, so a cached kernel is reused without apt or network;
// otherwise among the packages apt knows (`apt-cache search`). When there
// is none its error wraps ErrNoDebianKernel, or ErrNoAPTCache when apt-cache
// is not installed.
func NewestDebianABI(ctx context.Context, series, flavour, cacheDir string) (string, error) {
	if cacheDir == "" {
		cacheDir = CacheDir()
	}
	if abi := newestCached(filepath.Join(cacheDir, "kernels", "debian"), series, flavour); abi != "" {
		return abi, nil
	}
	return newestAPTABI(ctx, series, flavour)
}

// inSeries reports whether abi is a well-formed ABI with flavour and, unless
// series is "", of that series.
func inSeries(abi, series, flavour string) bool {
	if a, fl := splitDebianVersion(abi + "-" + flavour); a != abi || fl != flavour {
		return false
	}
	p, err := ParseDebianABI(abi)
	return err == nil && p.InSeries(series)
}

// newestCached returns the ABI of the newest completely unpacked package of
// series and flavour under root, or "".
func newestCached(root, series, flavour string) string {
	ents, _ := os.ReadDir(root)
	var abis []string
	suffix := "-" + flavour + "-unsigned"
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, "linux-image-") || !strings.HasSuffix(n, suffix) {
			continue
		}
		if abi := strings.TrimSuffix(strings.TrimPrefix(n, "linux-image-"), suffix); inSeries(abi, series, flavour) {
			abis = append(abis, abi)
		}
	}
	sort.Slice(abis, func(i, j int) bool { return abiLess(abis[j], abis[i]) })
	for _, abi := range abis {
		rel := abi + "-" + flavour
		pkg := "linux-image-" + rel + "-unsigned"
		if _, err := unpackedKernel(filepath.Join(root, pkg), rel, pkg); err == nil {
			return abi
		}
	}
	return ""
}

func newestAPTABI(ctx context.Context, series, flavour string) (string, error) {
	if _, err := proc.LookPath("apt-cache"); err != nil {
		return "", ErrNoAPTCache
	}
	// A POSIX regular expression for apt-cache: both ABI schemes
	// (6.1.0-47, 6.12.117+deb12); inSeries then keeps the series'
	// packages of exactly this flavour.
	ver := `[0-9]`
	if series != "" {
		ver = regexp.QuoteMeta(series) + `[-+.]`
	}
	re := `^linux-image-` + ver + `[-+.0-9a-z]*-` + strings.ReplaceAll(flavour, "-", `\-`) + `-unsigned$`
	out, err := (proc.Real{}).Run(ctx, proc.Cmd{Argv: []string{"apt-cache", "search", "--names-only", re}})
	if err != nil {
		return "", err
	}
	best := newestInSearch(string(out), series, flavour)
	if best == "" {
		return "", fmt.Errorf("linux-image-%s*-%s-unsigned: %w", series, flavour, ErrNoDebianKernel)
	}
	return best, nil
}

// newestInSearch returns the newest ABI of series and flavour among the
// linux-image-ABI-FLAVOUR-unsigned packages in apt-cache search output
// ("NAME - DESCRIPTION" lines), or "".
func newestInSearch(out, series, flavour string) string {
	var best string
	for _, line := range strings.Split(out, "\n") {
		name, _, _ := strings.Cut(line, " ")
		abi := strings.TrimSuffix(strings.TrimPrefix(name, "linux-image-"), "-"+flavour+"-unsigned")
		if abi == name || !inSeries(abi, series, flavour) {
			continue
		}
		if best == "" || abiLess(best, abi) {
			best = abi
		}
	}
	return best
}
