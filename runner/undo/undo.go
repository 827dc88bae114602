// Package undo is a LIFO stack of teardown steps (pktgen reset, perf stop,
// VM kill, qdisc restore, affinity restore, tap and netns delete). Steps run
// in reverse order of Push with their own deadline, even after the caller's
// context was cancelled (SIGINT), and every step runs even when an earlier
// one fails; the errors are joined.
//
// Constructors use it to undo their partial work on failure:
//
//	u := undo.New()
//	defer u.RunOnError(&err, 10*time.Second)
//	... u.Push("delete tap", func(ctx context.Context) error { ... })
//	return &Thing{undo: u.Release()}, nil
package undo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultTimeout bounds a whole Run when the caller gives 0.
const DefaultTimeout = 30 * time.Second

// Step is one teardown action. ctx carries the teardown deadline.
type Step func(ctx context.Context) error

// Stack is a LIFO stack of named steps. It is safe for concurrent use.
type Stack struct {
	mu    sync.Mutex
	steps []named
}

type named struct {
	name string
	fn   Step
}

// New returns an empty stack.
func New() *Stack { return &Stack{} }

// Push adds a step that Run will call before the steps pushed earlier.
func (s *Stack) Push(name string, fn Step) {
	s.mu.Lock()
	s.steps = append(s.steps, named{name, fn})
	s.mu.Unlock()
}

// Len is the number of pending steps.
func (s *Stack) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.steps)
}

// Names lists the pending steps in the order Run would call them.
func (s *Stack) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.steps))
	for i := len(s.steps) - 1; i >= 0; i-- {
		out = append(out, s.steps[i].name)
	}
	return out
}

// Release moves all pending steps into a new stack and empties s (a
// constructor that succeeded hands its teardown to the caller).
func (s *Stack) Release() *Stack {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := &Stack{steps: s.steps}
	s.steps = nil
	return n
}

// Merge moves the pending steps of o on top of s (they run first).
func (s *Stack) Merge(o *Stack) {
	if o == nil || o == s {
		return
	}
	o.mu.Lock()
	steps := o.steps
	o.steps = nil
	o.mu.Unlock()
	s.mu.Lock()
	s.steps = append(s.steps, steps...)
	s.mu.Unlock()
}

// Run pops and calls every step, last pushed first, within timeout (0 =
// DefaultTimeout) measured from now, independent of any caller context.
// A step that panics or fails does not stop the others. The result joins
// the errors, each prefixed with the step's name.
func (s *Stack) Run(timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return s.RunContext(ctx)
}

// RunContext is Run with a caller-made context; it should not be one that
// SIGINT cancels (use context.WithoutCancel plus a deadline).
func (s *Stack) RunContext(ctx context.Context) error {
	var errs []error
	for {
		s.mu.Lock()
		if len(s.steps) == 0 {
			s.mu.Unlock()
			break
		}
		st := s.steps[len(s.steps)-1]
		s.steps = s.steps[:len(s.steps)-1]
		s.mu.Unlock()
		if err := call(ctx, st.fn); err != nil {
			errs = append(errs, fmt.Errorf("undo %s: %w", st.name, err))
		}
	}
	return errors.Join(errs...)
}

func call(ctx context.Context, fn Step) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn(ctx)
}

// RunOnError runs the stack when *errp is non-nil and joins the teardown
// error into *errp. Use it deferred in constructors.
func (s *Stack) RunOnError(errp *error, timeout time.Duration) {
	if *errp == nil {
		return
	}
	if uerr := s.Run(timeout); uerr != nil {
		*errp = errors.Join(*errp, uerr)
	}
}
