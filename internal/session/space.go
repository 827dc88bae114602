package session

// Disk space: what a run writes that can fill a disk (the cache's
// fetches and kernel builds, perf record's files under the run
// directory), against what the disks have free. plan warns; run and its
// dry run refuse (exit 2) before anything is fetched, built or booted,
// where the run would have failed minutes later with ENOSPC, half done.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/scenarios"
)

// What each step writes, measured on the 2-core CI machine (2026-12-04:
// du of ~/.cache/vnetbench, the size of perf record's files). Each is a lower
// bound, so that a refusal means the run cannot fit, not that it might
// not; docs/running.md lists them.
const (
	// linux-source-6.1 unpacked (src/linux-source-6.1: 1.5 GiB) and
	// its package (~140 MB) while it unpacks.
	needFetchSource = 1600 << 20
	// Debian's kernel package unpacked (kernels/debian/linux-image-
	// 6.1.0-57-amd64-unsigned: 400 MiB) and its headers (kbuild/headers:
	// 83 MiB). Module builds (kbuild/mod) and decisions take under 1 MiB.
	needFetchDebian = 480 << 20
	// A tree's first whole kernel: its work tree, a copy (or git
	// worktree) of the source, 1.5 GiB for linux-source-6.1. The objects
	// are not counted: no whole build was in the cache to measure.
	needFullBuild = 1500 << 20
	// perf record of one busy thread at 999 Hz, per second of window,
	// without and with call graphs (-g); other targets not counted.
	// A shell loop for 5 s, n=3 each: 190736-199128 bytes, and
	// 336916-361780 with -g (its stacks are shallow; a kernel thread's
	// are deeper), less the ~4 KB header.
	perfBytesPerSec      = 36 << 10
	perfGraphBytesPerSec = 65 << 10
)

// diskNeed is what a run writes, in bytes, into the cache and under its
// run directory, and what for.
type diskNeed struct {
	cache, dir       int64
	cacheFor, dirFor []string
}

// needOf is the disk need of the builds modes do and of cells' perf
// record files.
func needOf(modes []lab.BuildMode, cells []scenarios.Cell) diskNeed {
	var n diskNeed
	for _, m := range modes {
		for _, it := range m.Items {
			b := map[string]int64{estimate.StepFetchSource: needFetchSource, estimate.StepFetchDebian: needFetchDebian, estimate.StepFullBuild: needFullBuild}[it.Kind]
			if it.N > 0 && b > 0 {
				n.cache += b
				n.cacheFor = append(n.cacheFor, it.What)
			}
		}
	}
	samples := 0
	for _, c := range cells {
		rec := c.Perf.Record
		if rec == nil {
			continue
		}
		d, known := c.Generator.Config.Length()
		if !known {
			continue // a count-bound window: its length is not known
		}
		rate := int64(perfBytesPerSec)
		if rec.CallGraph {
			rate = perfGraphBytesPerSec
		}
		n.dir += int64(d.Seconds() * float64(rate))
		samples++
	}
	if samples > 0 {
		n.dirFor = append(n.dirFor, fmt.Sprintf("perf record of %d samples", samples))
	}
	return n
}

// spaceProblems says where n does not fit: the cache in cache, the run
// directory dir (or the directory that will hold it). One file system
// holding both must have room for the sum. Nothing when it fits, or
// when a file system cannot be asked.
func spaceProblems(n diskNeed, cache, dir string) []string {
	type place struct {
		name, path string
		need       int64
		what       []string
		st         syscall.Statfs_t // its file system, asked once
	}
	if a, err := filepath.Abs(dir); err == nil && dir != "" {
		dir = a // plan's "runs": say where
	}
	var places []place
	add := func(name, path string, need int64, what []string) {
		if need <= 0 || path == "" {
			return
		}
		if st, ok := statfs(path); ok { // else it cannot be asked: no check
			places = append(places, place{name, path, need, what, st})
		}
	}
	add("the cache", cache, n.cache, n.cacheFor)
	add("the run directory", dir, n.dir, n.dirFor)
	if len(places) == 2 && places[0].st.Fsid == places[1].st.Fsid {
		places = []place{{"the cache and the run directory", places[0].path + " and " + places[1].path,
			n.cache + n.dir, append(append([]string(nil), n.cacheFor...), n.dirFor...), places[0].st}}
	}
	var out []string
	for _, p := range places {
		if free := int64(p.st.Bavail) * p.st.Bsize; free < p.need {
			out = append(out, fmt.Sprintf("%s (%s) has %s free, and this run needs at least %s there (%s; docs/running.md)",
				p.name, p.path, gib(free), gib(p.need), strings.Join(p.what, ", ")))
		}
	}
	return out
}

// statfsFunc is syscall.Statfs (tests: a full disk).
var statfsFunc = syscall.Statfs

// statfs asks the file system of path, or of its nearest existing
// parent (a run directory is made by the run).
func statfs(path string) (syscall.Statfs_t, bool) {
	var st syscall.Statfs_t
	p, err := filepath.Abs(path)
	if err != nil {
		return st, false
	}
	for {
		if _, err := os.Stat(p); err == nil {
			return st, statfsFunc(p, &st) == nil
		}
		parent := filepath.Dir(p)
		if parent == p {
			return st, false
		}
		p = parent
	}
}

// gib is a size in GiB, as du -h and df -h print it.
func gib(b int64) string {
	return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
}
