package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/internal/textsafe"
)

// checkMergeOut refuses an -o that holds a run (or anything) before the
// shards are read: the message run gives for it said to pass --resume,
// which merge does not have.
func checkMergeOut(out string) error {
	if _, err := os.Lstat(filepath.Join(out, results.ResultsFile)); err == nil {
		return fault.Input("merge: %s already holds a run (its %s); choose a new or empty directory for -o", out, results.ResultsFile)
	}
	return results.CheckDir(out, false)
}

// mergeInputs checks merge's inputs (each a run directory, given once,
// none of them out) and returns them as directories: a run's
// results.jsonl stands for its directory, as for report.
func mergeInputs(out string, dirs []string) ([]string, error) {
	asGiven := dirs
	dirs = slices.Clone(dirs)
	for i, d := range dirs {
		if filepath.Base(d) == results.ResultsFile {
			dirs[i] = filepath.Dir(d)
		}
	}
	given := map[string]string{}
	for i, d := range dirs {
		if abs(d) == abs(out) {
			return nil, fault.Input("merge: output %s is also an input; choose another -o", out)
		}
		// The same directory twice merged it with itself: a warning per
		// sample, and "merged 2 run directories" for a copy of one.
		real := abs(d)
		if r, err := filepath.EvalSymlinks(d); err == nil {
			real = r
		}
		if prev, dup := given[real]; dup {
			as := "" // two spellings of one directory: say both
			if prev != asGiven[i] {
				as = fmt.Sprintf(" (as %s and %s)", prev, asGiven[i])
			}
			return nil, fault.Input("merge: %s is given twice%s; give each run directory once", real, as)
		}
		given[real] = asGiven[i]
		if _, err := os.Stat(filepath.Join(d, results.ResultsFile)); err != nil {
			return nil, fault.Input("merge: %s has no %s; is it a run directory written by 'vnetbench run'?", d, results.ResultsFile)
		}
	}
	return dirs, nil
}

// Merge joins run directories (the shards of one scenario) into out:
// results.jsonl with every sample once (the first copy wins), env.json of
// the first run (with the merged run ids in Extra, without the shard
// marks), artifacts copied with their paths, and the reproduce.sh files
// one after another. The inputs must be one scenario measured by one
// harness on the same kernels: shards of different scenarios, seeds,
// harness versions or kernel identities are bad input (checkSameRun), and
// so are shards of 'run --shard' that are not all N of one split
// (checkShards). It returns warnings (duplicates, shards measured on
// different CPUs or accelerators).
func Merge(out string, dirs []string) ([]string, error) {
	if len(dirs) == 0 {
		return nil, fault.Input("merge: no run directories given")
	}
	dirs, err := mergeInputs(out, dirs)
	if err != nil {
		return nil, err
	}
	if err := checkMergeOut(out); err != nil {
		return nil, err
	}
	var warns []string
	envs := make([]*results.Env, len(dirs))
	for i, d := range dirs {
		e, err := results.ReadEnv(d)
		if err != nil {
			return nil, err
		}
		envs[i] = e
	}
	if err := checkShards(dirs, envs); err != nil {
		return nil, err
	}
	env := *envs[0]
	var ids []string
	for i, e := range envs {
		ids = append(ids, orStr(e.Run, dirs[i]))
		if i == 0 {
			continue
		}
		if err := checkSameRun(dirs[0], &env, dirs[i], e); err != nil {
			return nil, err
		}
		if e.CPUModel != env.CPUModel || e.Accel != env.Accel {
			warns = append(warns, textsafe.OneLine(fmt.Sprintf("%s was measured on %s (%s, %s), %s on %s (%s, %s): compare across shards with care",
				dirs[i], e.Hostname, e.CPUModel, e.Accel, dirs[0], env.Hostname, env.CPUModel, env.Accel)))
		}
	}
	env.Extra = maps.Clone(env.Extra)
	delete(env.Extra, ExtraShard)
	delete(env.Extra, ExtraShardSource)
	env.SetExtra("merged_from", strings.Join(ids, ","))
	w, err := results.Create(out, env)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	seen := map[results.Key]string{}
	var repro strings.Builder
	for i, d := range dirs {
		set, err := results.Load(d)
		if err != nil {
			return nil, err
		}
		warns = append(warns, set.Warnings...)
		kept := set.Samples[:0]
		for _, s := range set.Samples {
			k := results.Key{Cell: s.Cell, Kernel: s.Kernel, Rep: s.Rep}
			if prev, dup := seen[k]; dup {
				warns = append(warns, fmt.Sprintf("%s: cell %s kernel %s rep %d is also in %s; kept the first", d, s.Cell, s.Kernel, s.Rep+1, prev))
				continue
			}
			seen[k] = d
			kept = append(kept, s)
		}
		if err := w.AppendAll(kept); err != nil { // one fsync per shard, not per sample
			return nil, err
		}
		if err := copyTree(d, w.Root(), results.ShardDir(i+1)); err != nil {
			return nil, fmt.Errorf("merge: copy artifacts of %s: %w", d, err)
		}
		if b, err := readSmall(d, results.ReproduceFile); err == nil {
			fmt.Fprintf(&repro, "\n%s\n", safeComment("# ---- from "+d+" ----"))
			repro.Write(b)
		}
	}
	if repro.Len() > 0 {
		script := "#!/bin/sh\n" + safeComment("# Merged from "+strings.Join(dirs, " ")) + "\n" + repro.String()
		if err := w.Root().WriteFile(results.ReproduceFile, []byte(script), 0o755); err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
	}
	return warns, nil
}

// checkSameRun refuses to merge b into a when they are not shards of one
// run: another scenario, seed or harness version, or another kernel (the
// running kernel's release or identity, or a lab kernel's).
func checkSameRun(da string, a *results.Env, db string, b *results.Env) error {
	differ := func(what, va, vb string) error { // va, vb come from env.json: shown escaped
		return fault.Input("merge: %s and %s ran different %s (%s vs %s): only shards of one scenario, seed, harness and kernel set merge; run the missing cells with the same ones",
			da, db, what, textsafe.OneLine(va), textsafe.OneLine(vb))
	}
	switch {
	case a.Scenario != b.Scenario:
		return differ("scenarios", strconv.Quote(a.Scenario), strconv.Quote(b.Scenario))
	case a.Seed != b.Seed:
		return differ("seeds", seedDesc(a), seedDesc(b))
	case a.Version != b.Version:
		return differ("harness versions", strconv.Quote(a.Version), strconv.Quote(b.Version))
	case a.KernelRelease != b.KernelRelease:
		return differ("kernels", a.KernelRelease, b.KernelRelease)
	}
	if d := a.IdentityDiff(b); d != "" {
		return differ("kernels", "identity", d)
	}
	for label, ka := range a.Kernels {
		kb, ok := b.Kernels[label]
		if !ok {
			continue // a shard without that kernel's cells
		}
		if ka.KernelRelease != kb.KernelRelease {
			return differ("kernels labelled "+label, ka.KernelRelease, kb.KernelRelease)
		}
		if d := ka.IdentityDiff(kb); d != "" {
			return differ("kernels labelled "+label, "identity", d)
		}
	}
	return nil
}

// seedDesc is e's seed and, when env.json says, where it came from.
func seedDesc(e *results.Env) string {
	s := strconv.FormatInt(e.Seed, 10)
	if src := e.Extra[ExtraSeedSource]; src != "" {
		s += " from " + src
	}
	return s
}

// checkShards: when any input is a shard of 'run --shard I/N' (env.json's
// ExtraShard), all must be, of one N, each index once, none missing.
func checkShards(dirs []string, envs []*results.Env) error {
	sharded := envs[0].Extra[ExtraShard] != ""
	have := map[int]string{}
	n := 0
	for k, e := range envs {
		sh := e.Extra[ExtraShard]
		if (sh != "") != sharded {
			return fault.Input("merge: %s and %s: one is a shard of 'run --shard', the other is not; merge the shards of one run", dirs[0], dirs[k])
		}
		if !sharded {
			continue
		}
		i, m, err := ParseShard(sh)
		if err != nil {
			return fault.Input("merge: %s: env.json has shard %q: want I/N", dirs[k], sh)
		}
		if n != 0 && m != n {
			return fault.Input("merge: %s is shard %s but %s is shard %s: the shards of one run share N", dirs[k], sh, dirs[0], envs[0].Extra[ExtraShard])
		}
		n = m
		if prev, dup := have[i]; dup {
			return fault.Input("merge: shard %d/%d is given twice (%s and %s)", i, n, prev, dirs[k])
		}
		have[i] = dirs[k]
	}
	// N comes from a file: the work here is bounded by the directories
	// given, never by N (a forged 1/99999999 once listed every missing
	// shard, 6 GB of names). Every shard, also one without cells, writes
	// a directory, so N above the directories given is shards missing.
	nMissing := n - len(have)
	var missing []string
	for i := 1; i <= n && len(missing) < maxListed; i++ {
		if _, ok := have[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	switch {
	case nMissing == 0:
	case nMissing == 1:
		return fault.Input("merge: shard %s is missing (%d of %d given); add its run directory, or rerun it with --shard %s", missing[0], len(have), n, missing[0])
	case nMissing <= maxListed:
		return fault.Input("merge: shards %s are missing (%d of %d given); add their run directories, or rerun each with --shard I/N", strings.Join(missing, ", "), len(have), n)
	default:
		return fault.Input("merge: %d of %d shards are missing (%d given; the first missing: %s); add their run directories, or rerun each with --shard I/N", nMissing, n, len(have), strings.Join(missing, ", "))
	}
	return nil
}

// maxListed is how many missing shards an error names.
const maxListed = 10

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// copyTree copies the regular files of the run directory d's artifacts
// into out's, keeping relative paths; a file whose path out already has
// goes under alt (a path of the run directory) instead. It follows no symbolic link: links in
// d are skipped (its files are opened through safefs), and out writes
// through safefs.
func copyTree(d string, out *safefs.Dir, alt string) error {
	in, err := safefs.Open(d)
	if err != nil {
		return err
	}
	defer in.Close()
	src := filepath.Join(d, results.ArtifactsDir)
	return filepath.WalkDir(src, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(results.ArtifactsDir, rel)
		if de.IsDir() {
			return out.MkdirAll(target)
		}
		if !de.Type().IsRegular() {
			return nil
		}
		if _, err := out.Lstat(target); err == nil {
			target = filepath.Join(alt, rel)
		}
		return safefs.Copy(out, target, in, filepath.Join(results.ArtifactsDir, rel), 0o644, safefs.CopyNew)
	})
}

// readSmall reads the regular file name of the run directory d (no link
// followed, at most safefs.MaxSmall).
func readSmall(d, name string) ([]byte, error) {
	in, err := safefs.Open(d)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	return in.ReadFile(name, safefs.MaxSmall)
}
