package perfparse

import (
	"regexp"
	"sync"
)

// lazyRegexp returns a function that compiles expr on its first call and
// returns the same *regexp.Regexp on every call: the binary that
// imports this package (a guest's /init among its processes) does not
// compile the parsers' expressions before main. It is
// internal/lazyre.New, copied so that this public package imports
// nothing of the module.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
