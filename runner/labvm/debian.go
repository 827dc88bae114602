package labvm

import (
	"context"
	"errors"
	"strings"

	"github.com/vnetbench/vnetbench/vmimages"
)

// labFlavour is the Debian kernel flavour a lab VM boots: the generic one,
// because the cloud flavour (vmimages.DefaultDebianFlavour) has no 9p (the
// lab mounts the host root over 9p). The cloud flavour is fine as a nested
// guest.
const labFlavour = "amd64"

// debianLabVersion turns a scenario's Debian version into a full one with
// the lab flavour, for vmimages.FetchDebianKernel: a series ("6.1", "6.12")
// picks its newest ABI (cached, else known to apt:
// vmimages.NewestDebianABI), an ABI ("6.1.0-47", "6.12.117+deb12") gets
// "-amd64"; a version naming the cloud flavour is refused (no 9p).
func debianLabVersion(ctx context.Context, v, cacheDir string) (string, error) {
	switch {
	case strings.HasSuffix(v, "-cloud-amd64") || v == "cloud-amd64":
		return "", inputErrorf("Debian kernel %q: the cloud flavour has no 9p, which a lab VM needs for the host root; use the amd64 flavour (e.g. %q)", v, strings.Replace(v, "cloud-amd64", "amd64", 1))
	case strings.HasSuffix(v, "-amd64") || strings.HasSuffix(v, "-rt-amd64") || v == "amd64":
		return v, nil
	case isABI(v):
		return v + "-" + labFlavour, nil
	case vmimages.IsDebianSeries(v):
		abi, err := vmimages.NewestDebianABI(ctx, v, labFlavour, cacheDir)
		switch {
		case errors.Is(err, vmimages.ErrNoAPTCache):
			return "", inputErrorf("Debian kernel %s: apt-cache not found; give a full ABI (e.g. 6.12.117+deb12 or 6.1.0-47) or image:/modules:", v)
		case errors.Is(err, vmimages.ErrNoDebianKernel):
			return "", inputErrorf("no Debian %s kernel (linux-image-%s*-%s-unsigned) cached or known to apt; run apt-get update (6.12 comes from bookworm-security) or give image:/modules:", v, v, labFlavour)
		case err != nil:
			return "", err
		}
		return abi + "-" + labFlavour, nil
	}
	return "", inputErrorf("Debian kernel version %q: use MAJOR.MINOR (\"6.12\", \"6.1\"), an ABI (\"6.12.117+deb12\", \"6.1.0-47\") or ABI-flavour (\"6.12.117+deb12-amd64\")", v)
}

// DebianCached reports whether a lab kernel's Debian version v is
// unpacked in cacheDir as debianLabVersion and the fetch would find it
// (a series: its newest cached ABI of the lab flavour), asking apt
// nothing: then a run fetches nothing for it.
func DebianCached(v, cacheDir string) bool {
	if !isABI(v) && vmimages.IsDebianSeries(v) {
		v += "-" + labFlavour
	}
	full, err := debianLabVersion(context.Background(), v, cacheDir)
	return err == nil && vmimages.DebianKernelCached(full, cacheDir)
}

func isABI(v string) bool {
	_, err := vmimages.ParseDebianABI(v)
	return err == nil
}
