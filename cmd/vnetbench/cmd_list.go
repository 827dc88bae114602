package main

import (
	"context"
	"fmt"
	"io"

	"github.com/vnetbench/vnetbench/scenarios"
)

// cmdList prints the built-in scenarios with their one-line descriptions.
func cmdList(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("list", "", stderr)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("list takes no arguments (got %q); vnetbench plan NAME shows one scenario", pos[0])
	}
	bs := scenarios.Builtins()
	width := 0
	for _, b := range bs {
		width = max(width, len(b.Name))
	}
	for _, b := range bs {
		fmt.Fprintf(stdout, "%-*s  %s\n", width, b.Name, b.Description)
	}
	return nil
}
