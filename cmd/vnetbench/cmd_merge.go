package main

import (
	"context"
	"fmt"
	"io"

	"github.com/vnetbench/vnetbench/internal/textsafe"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/runner"
)

// cmdMerge joins the run directories of shards into one.
func cmdMerge(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("merge", "RUN_DIR... -o DIR", stderr)
	out := pathFlag(fs, "o", "merged run `DIR` (required, must not exist or be empty)")
	dirs, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *out == "" || len(dirs) == 0 {
		fs.Usage()
		return usageErrorf("merge: want run directories and -o DIR, e.g. vnetbench merge runs/s1 runs/s2 -o runs/all")
	}
	warns, err := runner.Merge(*out, absPaths(dirs))
	for _, w := range warns {
		fmt.Fprintf(stderr, "vnetbench: warning: %s\n", textsafe.Terminal(w))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "merged %s into %s\n", units.Plural(len(dirs), "run directory"), *out)
	return nil
}
