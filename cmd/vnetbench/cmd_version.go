package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set by the Makefile with -ldflags "-X main.version=...".
var version = "dev"

func cmdVersion(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "", stderr)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " " + s.Value[:12]
			}
		}
	}
	fmt.Fprintf(stdout, "vnetbench %s%s %s %s/%s\n", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
