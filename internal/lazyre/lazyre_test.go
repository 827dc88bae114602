package lazyre

import (
	"sync"
	"testing"
)

// The first call compiles; every call returns the same value, from any
// goroutine.
func TestNewCompilesOnce(t *testing.T) {
	re := New(`^a(b+)$`)
	got := make([]any, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = re() })
	}
	wg.Wait()
	for i := range got {
		if got[i] != got[0] {
			t.Fatalf("call %d returned another *regexp.Regexp", i)
		}
	}
	if m := re().FindStringSubmatch("abbb"); len(m) != 2 || m[1] != "bbb" {
		t.Errorf("match of abbb = %q, want [abbb bbb]", m)
	}
}

// A bad expression panics where it is used, not where it is declared.
func TestNewPanicsOnUse(t *testing.T) {
	re := New(`a(`)
	defer func() {
		if recover() == nil {
			t.Error("a bad expression did not panic on use")
		}
	}()
	re()
}
