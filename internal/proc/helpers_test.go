package proc

import (
	"context"
	"strconv"
	"testing"
)

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}

func itoa(i int) string { return strconv.Itoa(i) }
