package lab

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/vnetbench/vnetbench/vmimages"
)

// labFlavour is the Debian kernel flavour a lab VM boots: the generic one,
// because the cloud flavour (vmimages.DefaultDebianFlavour) has no 9p (the
// lab mounts the host root over 9p). The cloud flavour is fine as a nested
// guest.
const labFlavour = "amd64"

var (
	majorMinorRe = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)
	abiRe        = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+-[0-9]+$`)
)

// debianLabVersion turns a scenario's Debian version into a full one with
// the lab flavour, for vmimages.FetchDebianKernel: "6.1" picks the newest
// 6.1 ABI (cached, else known to apt: vmimages.NewestDebianABI),
// "6.1.0-47" gets "-amd64"; a version naming the cloud flavour is refused
// (no 9p).
func debianLabVersion(ctx context.Context, v, cacheDir string) (string, error) {
	switch {
	case strings.HasSuffix(v, "-cloud-amd64") || v == "cloud-amd64":
		return "", &InputError{fmt.Sprintf("Debian kernel %q: the cloud flavour has no 9p, which a lab VM needs for the host root; use the amd64 flavour (e.g. %q)", v, strings.Replace(v, "cloud-amd64", "amd64", 1))}
	case strings.HasSuffix(v, "-amd64") || strings.HasSuffix(v, "-rt-amd64") || v == "amd64":
		return v, nil
	case abiRe.MatchString(v):
		return v + "-" + labFlavour, nil
	case majorMinorRe.MatchString(v):
		abi, err := vmimages.NewestDebianABI(ctx, v, labFlavour, cacheDir)
		switch {
		case errors.Is(err, vmimages.ErrNoAPTCache):
			return "", &InputError{fmt.Sprintf("Debian kernel %s: apt-cache not found; give the full version (e.g. %s.0-47-amd64) or image:/modules:", v, v)}
		case errors.Is(err, vmimages.ErrNoDebianKernel):
			return "", &InputError{fmt.Sprintf("no Debian %s kernel (linux-image-%s.*-%s-unsigned) cached or known to apt; run apt-get update or give image:/modules:", v, v, labFlavour)}
		case err != nil:
			return "", err
		}
		return abi + "-" + labFlavour, nil
	}
	return "", &InputError{fmt.Sprintf("Debian kernel version %q: use MAJOR.MINOR (\"6.1\"), an ABI (\"6.1.0-47\") or ABI-flavour (\"6.1.0-47-amd64\")", v)}
}
