package fault

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClasses(t *testing.T) {
	cause := fs.ErrNotExist
	for _, tc := range []struct {
		name        string
		err         error
		text        string
		input, capb bool
	}{
		{"Input", Input("unknown metric %q; use one of %s", "tx", "tx_pps"), `unknown metric "tx"; use one of tx_pps`, true, false},
		{"Input wraps", Input("read %s: %w", "env.json", cause), "read env.json: file does not exist", true, false},
		{"InputError with cause", &InputError{Msg: "kernel /x not found", Err: cause}, "kernel /x not found: file does not exist", true, false},
		{"Capability", Capability("no %s on this host; install it", "perf"), "no perf on this host; install it", false, true},
		{"CapabilityError", &CapabilityError{Msg: "no /dev/vhost-net"}, "no /dev/vhost-net", false, true},
		{"wrapped by a caller", fmt.Errorf("cell a: %w", Capability("no pktgen")), "cell a: no pktgen", false, true},
		{"plain error", errors.New("boom"), "boom", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.text {
				t.Errorf("text = %q, want %q", got, tc.text)
			}
			if got := errors.Is(tc.err, ErrInput); got != tc.input {
				t.Errorf("errors.Is(ErrInput) = %v, want %v", got, tc.input)
			}
			if got := errors.Is(tc.err, ErrCapability); got != tc.capb {
				t.Errorf("errors.Is(ErrCapability) = %v, want %v", got, tc.capb)
			}
		})
	}
	if !errors.Is(Input("read: %w", cause), fs.ErrNotExist) {
		t.Error("Input(%w) hides its cause from errors.Is")
	}
}

func TestClip(t *testing.T) {
	if s := "short"; Clip(s) != s {
		t.Errorf("Clip(%q) = %q", s, Clip(s))
	}
	long := strings.Repeat("é", MaxQuote) // 2 bytes each
	got := Clip(long)
	if len(got) > MaxQuote+40 || !strings.HasSuffix(got, fmt.Sprintf("... (%d bytes in all)", len(long))) || !utf8.ValidString(got) {
		t.Errorf("Clip of %d bytes: %d bytes, %q...", len(long), len(got), got[len(got)-40:])
	}
}

// A void error keeps its message and cause; VoidCause finds its short
// cause through wrapping and joining, and tells a plain error apart.
func TestVoidCause(t *testing.T) {
	base := errors.New("iperf3: unable to write to stream socket: Connection reset by peer")
	err := fmt.Errorf("cell a rep 2: traffic: %w", errors.Join(VoidBecause("connection reset by peer", base), Void(errors.New("other"))))
	if !errors.Is(err, ErrVoid) || !errors.Is(err, base) || !strings.Contains(err.Error(), base.Error()) {
		t.Errorf("%v: not void, or its cause lost", err)
	}
	if c, ok := VoidCause(err); !ok || c != "connection reset by peer" {
		t.Errorf("VoidCause = %q, %v", c, ok)
	}
	if c, ok := VoidCause(Void(base)); !ok || c != "" {
		t.Errorf("VoidCause of Void = %q, %v; want no cause, void", c, ok)
	}
	if _, ok := VoidCause(base); ok {
		t.Error("a plain error is void")
	}
}
