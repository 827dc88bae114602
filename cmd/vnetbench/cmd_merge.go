package main

import (
	"context"
	"errors"
	"io"
)

// cmdMerge is wired up by the runner work (see the open issues).
func cmdMerge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("merge: not implemented yet")
}
