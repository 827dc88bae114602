package main

import (
	"context"
	"errors"
	"io"
)

// cmdParse is wired up by the perfparse work (see the open issues).
func cmdParse(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("parse: not implemented yet")
}
