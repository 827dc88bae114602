package undo

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLIFOAndJoinedErrors(t *testing.T) {
	s := New()
	var order []string
	for _, n := range []string{"netns", "tap", "qemu"} {
		s.Push(n, func(context.Context) error {
			order = append(order, n)
			if n == "tap" {
				return errors.New("busy")
			}
			if n == "qemu" {
				panic("boom")
			}
			return nil
		})
	}
	if got := s.Names(); !reflect.DeepEqual(got, []string{"qemu", "tap", "netns"}) {
		t.Errorf("Names = %v", got)
	}
	err := s.Run(time.Second)
	if !reflect.DeepEqual(order, []string{"qemu", "tap", "netns"}) {
		t.Errorf("order = %v", order)
	}
	if err == nil || !strings.Contains(err.Error(), "undo tap: busy") || !strings.Contains(err.Error(), "undo qemu: panic: boom") {
		t.Errorf("err = %v", err)
	}
	if s.Len() != 0 {
		t.Errorf("Len = %d after Run", s.Len())
	}
}

// Teardown has its own deadline: a cancelled caller context does not
// stop it, and a step sees a live context.
func TestRunsAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_ = ctx
	s := New()
	ran := false
	s.Push("x", func(ctx context.Context) error {
		ran = ctx.Err() == nil
		if _, ok := ctx.Deadline(); !ok {
			t.Error("no deadline")
		}
		return nil
	})
	if err := s.Run(0); err != nil || !ran {
		t.Errorf("err=%v ran=%v", err, ran)
	}
}

func TestRunOnErrorAndRelease(t *testing.T) {
	build := func(fail bool) (s *Stack, undone *bool, err error) {
		done := false
		u := New()
		defer u.RunOnError(&err, time.Second)
		u.Push("part", func(context.Context) error { done = true; return nil })
		if fail {
			return nil, &done, errors.New("second part failed")
		}
		return u.Release(), &done, nil
	}
	_, undone, err := build(true)
	if err == nil || !*undone {
		t.Errorf("failing constructor: err=%v undone=%v", err, *undone)
	}
	s, undone, err := build(false)
	if err != nil || *undone || s.Len() != 1 {
		t.Fatalf("ok constructor: err=%v undone=%v len=%d", err, *undone, s.Len())
	}
	outer := New()
	outer.Push("outer", func(context.Context) error { return nil })
	outer.Merge(s)
	if got := outer.Names(); !reflect.DeepEqual(got, []string{"part", "outer"}) {
		t.Errorf("merged names %v", got)
	}
}
