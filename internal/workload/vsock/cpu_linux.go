package vsock

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc/stat and /proc/PID/stat CPU times (USER_HZ,
// 100 on every Linux architecture the harness boots).
const userHZ = 100

// procRoot is where takeCPU reads the counters in the guest.
const procRoot = "/proc"

// cpuSnapshot is the CPU time, at one moment, of what the redirector
// costs the guest: the redirector's process, the kworker threads, and the
// whole guest.
type cpuSnapshot struct {
	redirector time.Duration         // all threads of the redirector's process
	kworkers   map[int]time.Duration // kworker pid -> on-CPU time
	busy       time.Duration         // all CPUs' non-idle time (/proc/stat)
	schedstat  bool                  // times from schedstat (ns), else stat (ticks)
}

// takeCPU reads the counters under root (procRoot; tests give a fixture
// tree); pid 0 = no redirector process.
func takeCPU(root string, pid int) cpuSnapshot {
	c := cpuSnapshot{kworkers: map[int]time.Duration{}, schedstat: true}
	if pid > 0 {
		tasks, _ := filepath.Glob(filepath.Join(root, strconv.Itoa(pid), "task", "*"))
		for _, t := range tasks {
			d, ns := taskCPU(t)
			c.redirector += d
			c.schedstat = c.schedstat && ns
		}
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join(root, e.Name())
		comm, err := os.ReadFile(filepath.Join(dir, "comm"))
		if err != nil || !strings.HasPrefix(string(comm), "kworker/") {
			continue
		}
		d, ns := taskCPU(dir)
		c.kworkers[p] = d
		c.schedstat = c.schedstat && ns
	}
	c.busy = busyTime(filepath.Join(root, "stat"))
	return c
}

// taskCPU is a task's on-CPU time: schedstat's first field (ns), else
// stat's utime + stime (ticks); ns reports which.
func taskCPU(dir string) (d time.Duration, ns bool) {
	if b, err := os.ReadFile(filepath.Join(dir, "schedstat")); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 1 {
			if v, err := strconv.ParseUint(f[0], 10, 64); err == nil {
				return time.Duration(v), true
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0, false
	}
	// The comm field may hold spaces: fields count from after its ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	// After comm: state(3) ... utime(14) stime(15) are f[11], f[12].
	if len(f) < 13 {
		return 0, false
	}
	u, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	return ticks(u + st), false
}

// busyTime is the non-idle time of all CPUs in /proc/stat's "cpu" line:
// user, nice, system, irq, softirq, steal (not idle, iowait, and not
// guest, which user already counts).
func busyTime(path string) time.Duration {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var sum uint64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, _ := strconv.ParseUint(f[i], 10, 64)
		sum += v
	}
	return ticks(sum)
}

func ticks(n uint64) time.Duration { return time.Duration(n) * time.Second / userHZ }

// since returns the CPU seconds from c0 to c: the redirector's process,
// the kworkers (a kworker that appeared in between counts from zero; one
// that ended is lost), the whole guest, and the source of the task times.
func (c cpuSnapshot) since(c0 cpuSnapshot) (redirector, kworkers, busy float64, source string) {
	redirector = (c.redirector - c0.redirector).Seconds()
	var kw time.Duration
	for p, d := range c.kworkers {
		if d0, ok := c0.kworkers[p]; ok && d >= d0 {
			kw += d - d0
		} else {
			kw += d // a new kworker (or a reused pid)
		}
	}
	source = "schedstat"
	if !c.schedstat || !c0.schedstat {
		source = "stat"
	}
	return max(0, redirector), max(0, kw.Seconds()), max(0, (c.busy - c0.busy).Seconds()), source
}
