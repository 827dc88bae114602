package report

import (
	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/verdict"
)

// MinEffect is the smallest change that matters: Value percent of the base
// median, or Value times the pooled interquartile range of the two sides
// when IQR. A verdict of SAME means the change is shown smaller; the zero
// value means DefaultMinEffect.
type MinEffect struct {
	Value float64
	IQR   bool
}

// DefaultMinEffect is half the pooled interquartile range
// (docs/compare.md, "The minimum effect").
var DefaultMinEffect = MinEffect(verdict.DefaultMinEffect)

// ParseMinEffect parses "2%" or "0.5iqr"; anything else is bad input
// (fault.ErrInput).
func ParseMinEffect(s string) (MinEffect, error) {
	m, err := verdict.ParseMinEffect(s)
	if err != nil {
		return MinEffect{}, &fault.InputError{Err: err}
	}
	return MinEffect(m), nil
}

// String is the --min-effect syntax: "2%" or "0.5iqr".
func (m MinEffect) String() string { return verdict.MinEffect(m).String() }

// verdict is m for the verdict package, DefaultMinEffect when zero.
func (m MinEffect) verdict() verdict.MinEffect {
	if m.Value <= 0 {
		return verdict.DefaultMinEffect
	}
	return verdict.MinEffect(m)
}

// Env is what a run recorded of its machine and kernel (env.json): CPU,
// kernel release and build, accelerator, governor, SMT, QEMU and the
// tools' versions. Like Runs, it is the results store's type under a
// public name, so Report.Env can be read outside the module.
type Env = results.Env
