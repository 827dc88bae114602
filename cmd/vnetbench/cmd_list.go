package main

import (
	"context"
	"errors"
	"io"
)

// cmdList is wired up by the scenarios work (see the open issues).
func cmdList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("list: not implemented yet")
}
