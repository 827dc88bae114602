package main

import (
	"context"
	"errors"
	"io"
)

// cmdImage is wired up by the vmimages work (see the open issues).
func cmdImage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("image: not implemented yet")
}
