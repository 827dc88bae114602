package main

import (
	"context"
	"errors"
	"io"
)

// cmdPlan is wired up by the scenarios work (see the open issues).
func cmdPlan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("plan: not implemented yet")
}
