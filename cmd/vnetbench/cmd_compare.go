package main

import (
	"context"
	"errors"
	"io"
)

// cmdCompare is wired up by the report work (see the open issues).
func cmdCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("compare: not implemented yet")
}
