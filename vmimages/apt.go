package vmimages

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/vnetbench/vnetbench/internal/proc"
)

// AptDownload fetches package pkg's .deb into dir with apt-get download
// (checked by apt against the archive's signed index), through ex, and
// returns its path. The error of a failed download is apt-get's (a
// *proc.ExitError with its last lines); callers add what to do.
func AptDownload(ctx context.Context, ex proc.Executor, dir, pkg string) (string, error) {
	// apt-get download writes into its working directory.
	if _, err := ex.Run(ctx, proc.Cmd{Argv: []string{"apt-get", "download", "-q", pkg}, Dir: dir}); err != nil {
		return "", err
	}
	debs, _ := filepath.Glob(filepath.Join(dir, pkg+"_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download %s: want one .deb, got %d (%s); retry", pkg, len(debs), strings.Join(debs, ", "))
	}
	return debs[0], nil
}
