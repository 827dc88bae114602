package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/verdict"
	"github.com/vnetbench/vnetbench/runner"
)

// newFlagSet returns a FlagSet that reports errors instead of exiting and
// prints its usage to w (on -h, or when a command calls fs.Usage). The
// flag package's own printing of a parse error and the usage after it is
// silenced: parseFlags returns the error as one line.
func newFlagSet(name, synopsis string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		io.WriteString(w, "usage: vnetbench "+name+" "+synopsis+"\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parse is fs.Parse without the usage the flag package prints on every
// parse error; -h prints it (errHelp).
func parse(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return errHelp
	case err != nil:
		return usageErrorf("%s: %s%s", fs.Name(), valueHint(fs, err), didYouMean(fs, err))
	}
	return negativeDuration(fs)
}

// negativeDuration refuses a duration flag given below 0: no duration
// flag has a meaning for one, and --max-time -1s passed as no limit,
// --lock-wait -1s as no wait.
func negativeDuration(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok && err == nil {
			if d, ok := g.Get().(time.Duration); ok && d < 0 {
				err = usageErrorf("%s: --%s %s: want a duration of 0 or more, e.g. --%s 30m", fs.Name(), f.Name, d, f.Name)
			}
		}
	})
	return err
}

// valueHint is a parse error of a value of one of the flag package's
// own types with its "parse error" replaced by what the flag wants
// (`--max-time 5`: "want a duration with its unit, e.g. --max-time 5m"),
// or the error as it is.
func valueHint(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	head, ok := strings.CutSuffix(msg, ": parse error")
	i := strings.LastIndex(head, " -")
	if !ok || i < 0 {
		return msg
	}
	name := head[i+len(" -"):]
	f := fs.Lookup(name)
	if f == nil {
		return msg
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return msg
	}
	switch g.Get().(type) {
	case bool:
		return head + ": want true or false, or --" + name + " alone for true"
	case time.Duration:
		return head + ": want a duration with its unit, e.g. --" + name + " 30m (Go durations: 90s, 30m, 2h)"
	case int, int64, uint, uint64:
		return head + ": want a whole number, e.g. --" + name + " 3"
	case float64:
		return head + ": want a number, e.g. --" + name + " 0.5"
	}
	return msg
}

// didYouMean is what follows an undefined flag's error: the defined flag
// closest to it (schema.DidYouMean: at most 2 edits away) and where the
// flags are listed ("; did you mean --fail-on? ('vnetbench compare -h'
// lists the flags)"), or "" for another error.
func didYouMean(fs *flag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	if (name == "o" || name == "output") && fs.Lookup("format") != nil {
		// compare and plan print; -o is report's and history's.
		return "; " + fs.Name() + " writes to stdout: choose the format with --format and redirect it (e.g. > out.html)"
	}
	list := "'vnetbench " + fs.Name() + " -h' lists the flags"
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
	if mean := schema.DidYouMean("--"+strings.TrimPrefix(name, "-"), names); mean != "" {
		return mean + " (" + list + ")"
	}
	return "; " + list
}

// parseFlags parses args allowing flags before and after positional
// arguments ("compare a b --fail-on x" works). A lone "--" ends flag
// parsing. It returns the positional arguments. -h returns errHelp, which
// callers return as is (exit 0 after usage was printed).
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// fs.Parse stops at the first non-flag, or after "--".
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if rest[0] == "-" || !strings.HasPrefix(rest[0], "-") {
			pos = append(pos, rest[0])
			args = rest[1:]
			continue
		}
		args = rest
	}
}

// errHelp means -h was given and usage was printed.
var errHelp = errors.New("help shown")

// pathFlag defines a flag whose value is a file or directory path, made
// absolute (and ~/ expanded) as it is parsed: nothing below cmd sees a
// relative path, so a tool that runs in another working directory (trafgen
// in a temporary directory, the run inside a lab VM) finds the same file.
func pathFlag(fs *flag.FlagSet, name, usage string) *string {
	p := new(string)
	pathVar(fs, p, name, usage)
	return p
}

// pathVar is pathFlag storing into p.
func pathVar(fs *flag.FlagSet, p *string, name, usage string) {
	fs.Func(name, usage, func(v string) error {
		*p = absPath(v)
		return nil
	})
}

// absPaths returns paths made absolute (see absPath).
func absPaths(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = absPath(p)
	}
	return out
}

// retiredFlag is a flag that is no longer used: giving it is bad input
// that says what to use instead.
type retiredFlag struct {
	name, instead string
	set           bool
}

func (f *retiredFlag) String() string   { return "" }
func (f *retiredFlag) Set(string) error { f.set = true; return nil }

// retiredAlpha registers --alpha, the level of the p column of the old
// Mann-Whitney-only rule: the verdicts' plan has its own levels.
func retiredAlpha(fs *flag.FlagSet) *retiredFlag {
	f := &retiredFlag{name: "alpha", instead: fmt.Sprintf("the verdicts keep their own plan (at most %.2g%% false DIFFERENT, docs/compare.md); set the change that matters with --min-effect or a gate threshold (--fail-on 'tx_pps<-3%%')",
		100*verdict.Default.NominalAlpha())}
	fs.Var(f, f.name, "retired: the verdicts and the p column follow the plan of docs/compare.md; use --min-effect")
	return f
}

// check returns the bad-input error of cmd when the flag was given.
func (f *retiredFlag) check(cmd string) error {
	if !f.set {
		return nil
	}
	return usageErrorf("%s: --%s is retired: %s", cmd, f.name, f.instead)
}

// seedZero refuses --seed 0, which ordered the cells by a random seed
// as if --seed were left out (0 is the scenario's "no seed"): a run
// asked to repeat an order did not.
const seedZero = "0 is no seed (it stands for none, and the order would be random); give a number other than 0, or leave --seed out for a random one (printed)"

// addSeedFlag defines run's --seed: a number, or auto (the CI pipeline's
// id; runner.ResolveSeed says which wins).
func addSeedFlag(fs *flag.FlagSet) *runner.SeedFlag {
	var f runner.SeedFlag
	fs.Func("seed", "seed of the interleaved cell order: `N`, or auto: from the CI pipeline's id (CI_PIPELINE_ID, GITHUB_RUN_ID or VNETBENCH_PIPELINE_ID; docs/ci.md) (default: the scenario's; with --shard, auto; else random; printed)", func(v string) error {
		if v == "auto" {
			f = runner.SeedFlag{Auto: true}
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("want a number or auto, e.g. --seed 42")
		}
		if n == 0 {
			return errors.New(seedZero)
		}
		f = runner.SeedFlag{N: n}
		return nil
	})
	return &f
}

// checkSymbolCounts returns the bad-input error of the first of fs's int
// flags named whose value is below 1. They count the symbols a table
// shows, and package report takes 0 or less as its default: such a value
// would be dropped in silence.
func checkSymbolCounts(fs *flag.FlagSet, names ...string) error {
	for _, name := range names {
		f := fs.Lookup(name)
		if n := f.Value.(flag.Getter).Get().(int); n < 1 {
			return usageErrorf("%s: --%s %d: want a number of symbols, 1 or more (default %s)", fs.Name(), name, n, f.DefValue)
		}
	}
	return nil
}

// given reports whether fs's flag name was on the command line (an empty
// value counts).
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
