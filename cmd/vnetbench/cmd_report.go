package main

import (
	"context"
	"errors"
	"io"
)

// cmdReport is wired up by the report work (see the open issues).
func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("report: not implemented yet")
}
