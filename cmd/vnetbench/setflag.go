package main

import (
	"flag"
	"strings"

	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/scenarios"
)

// setFlags is the repeatable --set KEY=VALUE: overrides of scenario keys,
// applied to the YAML before it is decoded (scenarios.Set).
type setFlags []scenarios.Set

func (s *setFlags) String() string { return strings.Join(s.strings(), " ") }

func (s *setFlags) Set(v string) error {
	st, err := scenarios.ParseSet(v)
	if err != nil {
		return err
	}
	*s = append(*s, st)
	return nil
}

func (s setFlags) strings() []string {
	out := make([]string, len(s))
	for i, st := range s {
		out[i] = st.String()
	}
	return out
}

// addSetFlag registers --set on fs.
func addSetFlag(fs *flag.FlagSet) *setFlags {
	var s setFlags
	fs.Var(&s, "set", "override a scenario key (`KEY=VALUE`) as its YAML would set it (repeatable; e.g. --set generator.pktgen.duration=10s --set repetitions=3)")
	return &s
}

// setArgs is overrides as shell-quoted --set arguments.
func setArgs(sets []string) string {
	var argv []string
	for _, s := range sets {
		argv = append(argv, "--set", s)
	}
	return proc.Quote(argv)
}
