package runner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
)

// Merge joins run directories (the shards of one scenario) into out:
// results.jsonl with every sample once (the first copy wins), env.json of
// the first run (with the merged run ids in Extra), artifacts copied
// with their paths, and the reproduce.sh files one after another. It
// returns warnings (duplicates, shards measured on different hosts).
func Merge(out string, dirs []string) ([]string, error) {
	if len(dirs) == 0 {
		return nil, fault.Input("merge: no run directories given")
	}
	for _, d := range dirs {
		if abs(d) == abs(out) {
			return nil, fault.Input("merge: output %s is also an input; choose another -o", out)
		}
		if _, err := os.Stat(filepath.Join(d, results.ResultsFile)); err != nil {
			return nil, fault.Input("merge: %s has no %s; is it a run directory written by 'vnetbench run'?", d, results.ResultsFile)
		}
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
	env := *envs[0]
	var ids []string
	for i, e := range envs {
		ids = append(ids, orStr(e.Run, dirs[i]))
		if i > 0 && (e.Hostname != env.Hostname || e.KernelRelease != env.KernelRelease || e.CPUModel != env.CPUModel || e.Accel != env.Accel) {
			warns = append(warns, fmt.Sprintf("%s was measured on %s/%s/%s/%s, %s on %s/%s/%s/%s: compare across shards with care",
				dirs[i], e.Hostname, e.KernelRelease, e.CPUModel, e.Accel, dirs[0], env.Hostname, env.KernelRelease, env.CPUModel, env.Accel))
		}
	}
	if env.Extra == nil {
		env.Extra = map[string]string{}
	}
	env.Extra["merged_from"] = strings.Join(ids, ",")
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
		for _, s := range set.Samples {
			k := results.Key{Cell: s.Cell, Kernel: s.Kernel, Rep: s.Rep}
			if prev, dup := seen[k]; dup {
				warns = append(warns, fmt.Sprintf("%s: cell %s kernel %s rep %d is also in %s; kept the first", d, s.Cell, s.Kernel, s.Rep+1, prev))
				continue
			}
			seen[k] = d
			if err := w.Append(s); err != nil {
				return nil, err
			}
		}
		if err := copyTree(filepath.Join(d, results.ArtifactsDir), out, results.ArtifactsDir, results.ShardDir(i+1)); err != nil {
			return nil, fmt.Errorf("merge: copy artifacts of %s: %w", d, err)
		}
		if b, err := results.ReadFileNoFollow(filepath.Join(d, results.ReproduceFile)); err == nil {
			fmt.Fprintf(&repro, "\n%s\n", safeComment("# ---- from "+d+" ----"))
			repro.Write(b)
		}
	}
	if repro.Len() > 0 {
		script := "#!/bin/sh\n" + safeComment("# Merged from "+strings.Join(dirs, " ")) + "\n" + repro.String()
		if err := results.WriteFileAtomic(out, results.ReproduceFile, []byte(script), 0o755); err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
	}
	return warns, nil
}

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// copyTree copies the regular files of src into out/dst keeping relative
// paths; a file whose path out/dst already has goes under out/alt instead.
// It follows no symbolic link: links in src are skipped, and in out no
// directory or file name is followed (results.MkdirNoFollow, O_EXCL).
func copyTree(src, out, dst, alt string) error {
	return filepath.WalkDir(src, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if de.IsDir() {
			return results.MkdirNoFollow(out, filepath.Join(dst, rel))
		}
		if !de.Type().IsRegular() {
			return nil
		}
		target := filepath.Join(dst, rel)
		if _, err := os.Lstat(filepath.Join(out, target)); err == nil {
			target = filepath.Join(alt, rel)
			if err := results.MkdirNoFollow(out, filepath.Dir(target)); err != nil {
				return err
			}
		}
		return copyFile(p, filepath.Join(out, target))
	})
}

// copyFile hard-links src at dst, else copies it into a new file dst.
func copyFile(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := results.OpenNoFollow(src, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	o, err := results.OpenNoFollow(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}
