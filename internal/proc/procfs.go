package proc

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// What /proc says about processes the harness watches: children, threads,
// kernel threads, CPU time. Linux only; on error the answers are empty.
//
// FS reads a /proc tree: the machine's (Host) or one a test writes, so
// thread discovery is tested for kernels other than the running one (6.4+
// vhost workers inside QEMU, older kthreads, per-namespace kpktgend).

// FS is a /proc tree rooted at Root ("" = /proc).
type FS struct{ Root string }

// Host is this machine's /proc.
var Host = FS{Root: "/proc"}

func (f FS) path(parts ...string) string {
	root := f.Root
	if root == "" {
		root = "/proc"
	}
	return filepath.Join(append([]string{root}, parts...)...)
}

// Stat is what the harness reads from /proc/PID/stat.
type Stat struct {
	PID   int
	Comm  string
	PPID  int
	Ticks uint64 // utime + stime, clock ticks
	// Start is the start time in clock ticks after boot (field 22):
	// threads created later have larger values.
	Start uint64
}

// parseStat parses a stat line; comm may hold spaces and parentheses.
func parseStat(s string) (Stat, bool) {
	l, r := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if l < 0 || r < l {
		return Stat{}, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:l]))
	if err != nil {
		return Stat{}, false
	}
	f := strings.Fields(s[r+1:])
	if len(f) < 20 {
		return Stat{}, false
	}
	st := Stat{PID: pid, Comm: s[l+1 : r]}
	st.PPID, _ = strconv.Atoi(f[1])
	u, _ := strconv.ParseUint(f[11], 10, 64)
	sy, _ := strconv.ParseUint(f[12], 10, 64)
	st.Ticks = u + sy
	st.Start, _ = strconv.ParseUint(f[19], 10, 64)
	return st, true
}

// Stat reads /proc/PID/stat.
func (f FS) Stat(pid int) (Stat, bool) {
	b, err := os.ReadFile(f.path(strconv.Itoa(pid), "stat"))
	if err != nil {
		return Stat{}, false
	}
	return parseStat(string(b))
}

// KernelThreads returns the kernel threads (children of kthreadd, pid 2)
// whose name matches, in pid order.
func (f FS) KernelThreads(match func(comm string) bool) []Stat {
	ents, err := os.ReadDir(f.path())
	if err != nil {
		return nil
	}
	var out []Stat
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := f.Stat(pid)
		if !ok || st.PPID != 2 || !match(st.Comm) {
			continue
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// Thread is one thread of a process.
type Thread struct {
	TID  int
	Name string
}

// Threads lists the threads of pid with their names (/proc/PID/task), in
// tid order.
func (f FS) Threads(pid int) ([]Thread, error) {
	dir := f.path(strconv.Itoa(pid), "task")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Thread
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "comm"))
		if err != nil {
			continue
		}
		out = append(out, Thread{TID: tid, Name: strings.TrimSpace(string(b))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TID < out[j].TID })
	return out, nil
}

// Children lists the direct children of pid (all its threads' children).
func (f FS) Children(pid int) []int {
	dir := f.path(strconv.Itoa(pid), "task")
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
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// CPUTicks returns utime+stime in clock ticks for each pid (whole
// process); pids that are gone are left out.
func (f FS) CPUTicks(pids []int) map[int]uint64 {
	m := map[int]uint64{}
	for _, p := range pids {
		if st, ok := f.Stat(p); ok {
			m[p] = st.Ticks
		}
	}
	return m
}

// KernelThreads returns the pids of this machine's kernel threads whose
// name matches.
func KernelThreads(match func(comm string) bool) []int {
	var pids []int
	for _, st := range Host.KernelThreads(match) {
		pids = append(pids, st.PID)
	}
	return pids
}

// Children lists the direct children of pid on this machine.
func Children(pid int) []int { return Host.Children(pid) }

// CPUTicks is Host.CPUTicks.
func CPUTicks(pids []int) map[int]uint64 { return Host.CPUTicks(pids) }

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

// NewKernelThreads picks, among kernel threads of one name (kpktgend_N),
// those that belong to a network namespace created after the snapshot
// before (the pids of such threads then): per-namespace kernel threads
// (pktgen makes kpktgend_N for every namespace) are named alike in every
// namespace and all sit in init's namespace as far as /proc shows, but
// the namespace's own appear when it is created. Of several new ones per
// name (another namespace created meanwhile) the earliest started wins.
// It returns the threads and whether the choice was ambiguous.
func NewKernelThreads(threads []Stat, before map[int]bool) (picked []Stat, ambiguous bool) {
	byName := map[string][]Stat{}
	var names []string
	for _, t := range threads {
		if before[t.PID] {
			continue
		}
		if _, ok := byName[t.Comm]; !ok {
			names = append(names, t.Comm)
		}
		byName[t.Comm] = append(byName[t.Comm], t)
	}
	sort.Strings(names)
	for _, n := range names {
		ts := byName[n]
		sort.Slice(ts, func(i, j int) bool {
			if ts[i].Start != ts[j].Start {
				return ts[i].Start < ts[j].Start
			}
			return ts[i].PID < ts[j].PID
		})
		ambiguous = ambiguous || len(ts) > 1
		picked = append(picked, ts[0])
	}
	return picked, ambiguous
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
