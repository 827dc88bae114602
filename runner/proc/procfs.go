package proc

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// What /proc says about processes the harness watches: children,
// kernel threads, CPU time. Linux only; on error the answers are empty.

// KernelThreads returns the pids of kernel threads (children of kthreadd,
// pid 2) whose name matches.
func KernelThreads(match func(comm string) bool) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		l, r := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if l < 0 || r < l {
			continue
		}
		f := strings.Fields(s[r+1:])
		if len(f) < 2 || f[1] != "2" || !match(s[l+1:r]) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// Children lists the direct children of pid (all its threads' children).
func Children(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "children"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// CPUTicks returns utime+stime in clock ticks for each pid (whole
// process); pids that are gone are left out.
func CPUTicks(pids []int) map[int]uint64 {
	m := map[int]uint64{}
	for _, p := range pids {
		if t, ok := readCPUTicks("/proc/" + strconv.Itoa(p) + "/stat"); ok {
			m[p] = t
		}
	}
	return m
}

// readCPUTicks reads utime+stime (fields 14 and 15) of a stat file.
func readCPUTicks(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := string(b)
	r := strings.LastIndexByte(s, ')')
	if r < 0 {
		return 0, false
	}
	f := strings.Fields(s[r+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	return u + st, true
}

// clkTck is USER_HZ, 100 on every Linux ABI that matters here.
const clkTck = 100

// BusyFrac is the CPU time between two CPUTicks samples divided by the
// elapsed time and the number of workers (1 = every worker busy all the
// time; -1 = unknown).
func BusyFrac(a, b map[int]uint64, elapsed time.Duration, workers int) float64 {
	if elapsed <= 0 || len(b) == 0 {
		return -1
	}
	var ticks uint64
	for p, t1 := range b {
		if t0, ok := a[p]; ok && t1 >= t0 {
			ticks += t1 - t0
		} else {
			ticks += t1
		}
	}
	return float64(ticks) / clkTck / elapsed.Seconds() / float64(workers)
}

// IsSignal reports whether err is the exit of a process killed by sig
// ("interrupt", "killed", ...).
func IsSignal(err error, sig string) bool {
	var e *ExitError
	return errors.As(err, &e) && e.Signal == sig
}

// WaitErr is p's exit error, or an error saying it exited with status 0
// (for a process that was meant to run on).
func WaitErr(p Process) error {
	if err := p.Wait(); err != nil {
		return err
	}
	return errors.New("exit status 0")
}
