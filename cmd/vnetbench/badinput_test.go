package main

import (
	"bytes"
	"strings"
	"testing"
)

// A count of symbols below 1 fell back to the default in silence
// (`report --top -1` showed 10 symbols): it is bad input, one line that
// names the flag, the value and what is allowed.
func TestCountFlagBelowOneIsBadInput(t *testing.T) {
	lab := real + "lab-pktgen-tcg"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--top", "-1", lab}, "--top -1: want a number of symbols, 1 or more"},
		{[]string{"report", "--profile-top", "-3", lab}, "--profile-top -3: want a number of symbols, 1 or more"},
		{[]string{"report", "--top", "0", lab}, "--top 0: want"},
		{[]string{"compare", "--profile-top", "-1", runs + "few-a", runs + "few-b"}, "--profile-top -1: want"},
	} {
		var out, errb bytes.Buffer
		err := run(t.Context(), tc.args, &out, &errb)
		if code := exitCode(err); code != exitBadInput {
			t.Errorf("%v: exit %d (%v), want 2", tc.args, code, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: %q, want one line with %q", tc.args, msg, tc.want)
		}
	}
}
