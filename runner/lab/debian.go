package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// labFlavour is the Debian kernel flavour a lab VM boots: the generic one,
// because the cloud flavour has no 9p (the lab mounts the host root over
// 9p). The cloud flavour is fine as a nested guest.
const labFlavour = "amd64"

var (
	majorMinorRe = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)
	abiRe        = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+-[0-9]+$`)
)

// debianLabVersion turns a scenario's Debian version into a full one with
// the lab flavour: "6.1" picks the newest 6.1 ABI (cached, else known to
// apt), "6.1.0-47" gets "-amd64"; a version naming the cloud flavour is
// refused (no 9p).
func debianLabVersion(ctx context.Context, v, cacheDir string) (string, error) {
	switch {
	case strings.HasSuffix(v, "-cloud-amd64") || v == "cloud-amd64":
		return "", &InputError{fmt.Sprintf("Debian kernel %q: the cloud flavour has no 9p, which a lab VM needs for the host root; use the amd64 flavour (e.g. %q)", v, strings.Replace(v, "cloud-amd64", "amd64", 1))}
	case strings.HasSuffix(v, "-amd64") || strings.HasSuffix(v, "-rt-amd64") || v == "amd64":
		return v, nil
	case abiRe.MatchString(v):
		return v + "-" + labFlavour, nil
	case majorMinorRe.MatchString(v):
		abi, err := newestABI(ctx, v, cacheDir)
		if err != nil {
			return "", err
		}
		return abi + "-" + labFlavour, nil
	}
	return "", &InputError{fmt.Sprintf("Debian kernel version %q: use MAJOR.MINOR (\"6.1\"), an ABI (\"6.1.0-47\") or ABI-flavour (\"6.1.0-47-amd64\")", v)}
}

// newestABI returns the newest "X.Y.Z-N" ABI of major.minor: from the
// cache when one is unpacked there, else from apt-cache's package names.
func newestABI(ctx context.Context, mm, cacheDir string) (string, error) {
	re := regexp.MustCompile(`^linux-image-(` + regexp.QuoteMeta(mm) + `\.[0-9]+-[0-9]+)-` + labFlavour + `-unsigned$`)
	var abis []string
	ents, _ := os.ReadDir(filepath.Join(cacheDir, "kernels", "debian"))
	for _, e := range ents {
		if m := re.FindStringSubmatch(e.Name()); m != nil {
			abis = append(abis, m[1])
		}
	}
	if len(abis) == 0 {
		if _, err := exec.LookPath("apt-cache"); err != nil {
			return "", &InputError{fmt.Sprintf("Debian kernel %s: apt-cache not found; give the full version (e.g. %s.0-47-amd64) or image:/modules:", mm, mm)}
		}
		out, err := exec.CommandContext(ctx, "apt-cache", "search", "--names-only", `^linux-image-`+strings.ReplaceAll(mm, ".", `\.`)+`\.[0-9]+-[0-9]+-`+labFlavour+`-unsigned$`).Output()
		if err != nil {
			return "", fmt.Errorf("apt-cache search: %w", err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			name, _, _ := strings.Cut(l, " ")
			if m := re.FindStringSubmatch(name); m != nil {
				abis = append(abis, m[1])
			}
		}
	}
	if len(abis) == 0 {
		return "", &InputError{fmt.Sprintf("no Debian %s kernel (linux-image-%s.*-%s-unsigned) cached or known to apt; run apt-get update or give image:/modules:", mm, mm, labFlavour)}
	}
	sort.Slice(abis, func(i, j int) bool { return abiLess(abis[i], abis[j]) })
	return abis[len(abis)-1], nil
}

func abiLess(a, b string) bool {
	key := func(s string) []int {
		var k []int
		for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '-' }) {
			n, _ := strconv.Atoi(f)
			k = append(k, n)
		}
		return k
	}
	ka, kb := key(a), key(b)
	for i := 0; i < len(ka) && i < len(kb); i++ {
		if ka[i] != kb[i] {
			return ka[i] < kb[i]
		}
	}
	return len(ka) < len(kb)
}
