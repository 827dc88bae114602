// Package sample is go test input for testsummary's tests: one test of
// each outcome. Not part of the module's packages (testdata).
package sample

import (
	"testing"
	"time"
)

func TestPass(t *testing.T) { t.Log("passing, not shown") }

func TestFail(t *testing.T) { t.Error("boom") }

func TestSkip(t *testing.T) {
	t.Log("looked for a widget")
	t.Skip("no widget")
}

func TestSub(t *testing.T) {
	t.Run("runs", func(t *testing.T) {})
	t.Run("skips", func(t *testing.T) { t.Skipf("needs %s", "root") })
}

func TestSubFail(t *testing.T) {
	t.Run("fails", func(t *testing.T) { t.Error("sub boom") })
}

func TestSlow(t *testing.T) { time.Sleep(1100 * time.Millisecond) }
