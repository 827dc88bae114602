package qemu

import (
	"slices"
	"testing"
)

// TestExecURI: the state's path is quoted for the shell QEMU runs exec:
// with, and a path the quotes cannot hold is refused.
func TestExecURI(t *testing.T) {
	if u, err := execURI("cat > ", "/run dir/state"); err != nil || u != "exec:cat > '/run dir/state'" {
		t.Errorf("got %q, %v", u, err)
	}
	for _, bad := range []string{"", "/a'b", "/a\nb"} {
		if u, err := execURI("cat ", bad); err == nil {
			t.Errorf("path %q: got %q, want an error", bad, u)
		}
	}
}

// TestArgsIncoming: a VM started for a saved state waits paused for it.
func TestArgsIncoming(t *testing.T) {
	a := Args(Config{Incoming: true})
	if !slices.Equal(a[len(a)-3:], []string{"-S", "-incoming", "defer"}) {
		t.Errorf("argv ends %q", a[len(a)-3:])
	}
	if a := Args(Config{}); slices.Contains(a, "-incoming") {
		t.Errorf("a boot's argv has -incoming: %q", a)
	}
}
