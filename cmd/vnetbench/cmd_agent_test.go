package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestDispatch(t *testing.T) {
	for _, tc := range []struct {
		pid   int
		argv  []string
		agent bool
		args  []string
	}{
		// The guest's initramfs /init: the agent, whatever the pid.
		{1, []string{"/init"}, true, nil},
		{1, []string{"/init", "console=ttyS0"}, true, nil},
		{57, []string{"/init"}, true, nil},
		{1, []string{"/sbin/init"}, true, nil},
		// A lab VM's /init: lab-init, after any unknown kernel parameters.
		{1, []string{"/init", "lab-init"}, false, []string{"lab-init"}},
		{1, []string{"/init", "foo=bar", "quiet2", "lab-init"}, false, []string{"lab-init"}},
		{1, []string{"init", "x=1", "lab-init", "extra"}, false, []string{"lab-init", "extra"}},
		{1, []string{"/usr/bin/vnetbench", "lab-init"}, false, []string{"lab-init"}},
		// The CLI: PID 1 in a container is not the guest.
		{1, []string{"/usr/bin/vnetbench", "run", "x.yaml"}, false, []string{"run", "x.yaml"}},
		{4242, []string{"vnetbench", "doctor"}, false, []string{"doctor"}},
		{4242, []string{"init"}, false, []string{}},
		// Not PID 1: lab-init only as the subcommand itself.
		{4242, []string{"vnetbench", "lab-init"}, false, []string{"lab-init"}},
		{4242, []string{"vnetbench", "list", "lab-init"}, false, []string{"list", "lab-init"}},
		{1, nil, false, nil},
	} {
		agent, args := dispatch(tc.pid, tc.argv)
		if agent != tc.agent || !reflect.DeepEqual(args, tc.args) {
			t.Errorf("dispatch(%d, %q) = %v, %q; want %v, %q", tc.pid, tc.argv, agent, args, tc.agent, tc.args)
		}
		if got := isGuestInit(tc.pid, tc.argv); got != tc.agent {
			t.Errorf("isGuestInit(%d, %q) = %v, want %v", tc.pid, tc.argv, got, tc.agent)
		}
	}
}

func TestHelpHidesInternalCommands(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(t.Context(), []string{"help"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, hidden := range []string{"lab-init", "lab-selftest"} {
		if _, ok := commands[hidden]; !ok {
			t.Fatalf("%s is not registered", hidden)
		}
		if strings.Contains(out.String(), hidden) {
			t.Errorf("help lists hidden command %s:\n%s", hidden, out.String())
		}
	}
	for _, shown := range []string{"run", "doctor", "version"} {
		if !strings.Contains(out.String(), "  "+shown+" ") {
			t.Errorf("help does not list %s:\n%s", shown, out.String())
		}
	}
	// Hidden commands still run: lab-init refuses outside PID 1.
	err := run(t.Context(), []string{"lab-init"}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "PID 1") {
		t.Errorf("lab-init outside PID 1: err = %v, want a PID 1 refusal", err)
	}
}
