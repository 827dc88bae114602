// Package lazyre holds regular expressions that are compiled the first
// time they are used rather than when the program starts. Every package
// variable's initializer runs before main, in every process of this
// binary, including a guest's /init under nested emulation where
// compiling the module's regular expressions took seconds; most processes
// use few of them. internal/archtest keeps package variables from
// compiling one at init and checks that every expression given to New
// compiles.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr on its first call, panicking
// there as regexp.MustCompile does on a bad expression, and returns the
// same *regexp.Regexp on every call. It is safe for concurrent use.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
