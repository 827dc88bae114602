package main

import (
	"context"
	"errors"
	"io"
)

// cmdDoctor is wired up by the runner work (see the open issues).
func cmdDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("doctor: not implemented yet")
}
