package main

import (
	"flag"
	"strconv"

	"github.com/vnetbench/vnetbench/scenarios"
)

// perPatchFlag is --per-patch: the scenario's per_patch key, set where the
// flag stands among the --set overrides (so a later --set per_patch=...
// wins, as for any key).
type perPatchFlag struct{ sets *setFlags }

func (p perPatchFlag) String() string { return "false" }

func (p perPatchFlag) IsBoolFlag() bool { return true }

func (p perPatchFlag) Set(v string) error {
	on, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	*p.sets = append(*p.sets, scenarios.Set{Key: "per_patch", Value: strconv.FormatBool(on)})
	return nil
}

// addPerPatchFlag registers --per-patch on fs, adding to sets.
func addPerPatchFlag(fs *flag.FlagSet, sets *setFlags) {
	fs.Var(perPatchFlag{sets}, "per-patch", "a column per patch: the last kernel with patches becomes its base and one column per prefix of its series (p1, p1-2, ..., the whole series), each built incrementally; the tables show each column's change from the one before and from the base (docs/perpatch.md; the scenario key per_patch)")
}
