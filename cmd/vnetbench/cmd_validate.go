package main

import (
	"context"
	"errors"
	"io"
)

// cmdValidate is wired up by the scenarios work (see the open issues).
func cmdValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("validate: not implemented yet")
}
