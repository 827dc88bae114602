package main

import (
	"context"
	"errors"
	"io"
)

// cmdRun is wired up by the runner work (see the open issues).
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("run: not implemented yet")
}
