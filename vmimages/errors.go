package vmimages

import (
	"fmt"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// inputErrorf is bad input or a missing capability: a kernel path that
// does not exist, a module the kernel does not have, a host without
// apt-get. Its message says what is wrong and how to fix it; cause (may be
// nil) follows it. It is of class fault.ErrInput.
func inputErrorf(cause error, format string, a ...any) *fault.InputError {
	return &fault.InputError{Msg: fmt.Sprintf(format, a...), Err: cause}
}
