package main

import (
	"bytes"
	"fmt"
	"io"
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

// An empty --fail-on (a CI job's gate variable left unset: --fail-on
// "$FAIL_ON") gated as if the flag were left out, on the default gates:
// not what the job wrote. An empty or blank value is bad input that says
// to name a gate or leave the flag out.
func TestEmptyFailOnIsBadInput(t *testing.T) {
	for _, v := range []string{"", "  ", " , "} {
		args := []string{"compare", runs + "few-a", runs + "few-b", "--fail-on", v}
		var out, errb bytes.Buffer
		err := run(t.Context(), args, &out, &errb)
		if code := exitCode(err); code != exitBadInput {
			t.Errorf("--fail-on %q: exit %d (%v), want 2", v, code, err)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, "name a gate such as 'tx_pps<-3%'") || !strings.Contains(msg, "leave --fail-on out for the default gates") {
			t.Errorf("--fail-on %q: %q, want one line saying to name a gate or leave the flag out", v, msg)
		}
		if out.Len() > 0 {
			t.Errorf("--fail-on %q: compared anyway:\n%s", v, out.String())
		}
	}
}

// run --until-decided takes compare's --fail-on, and an empty one too is
// bad input, not the default gates.
func TestRunEmptyFailOnIsBadInput(t *testing.T) {
	fs := newFlagSet("run", "", io.Discard)
	f := addUntilFlags(fs)
	if _, err := parseFlags(fs, []string{"--until-decided", "--fail-on", ""}); err != nil {
		t.Fatal(err)
	}
	u, err := f.value(t.Context(), io.Discard)
	if exitCode(err) != exitBadInput || !strings.Contains(fmt.Sprint(err), "leave --fail-on out") {
		t.Errorf("run --until-decided --fail-on '': gates %v, err %v; want bad input", u.Gates, err)
	}
}
