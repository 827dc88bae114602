package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/ledger"
)

// Leftover is a resource a vnetbench process recorded in its ledger and
// did not remove because it was killed: an entry of a ledger whose owner
// is gone. Nothing found only by its name is a leftover.
type Leftover struct {
	ledger.Orphan
	// Busy says why CleanLeftovers keeps it ("" = it can go): in use, or
	// not provably the one the run made.
	Busy string
	// Gone: it no longer exists; only the ledger's line is left.
	Gone bool
}

func (l Leftover) String() string {
	s := l.Entry.Kind + " " + l.Entry.Name
	switch l.Entry.Kind {
	case ledger.Tap, ledger.Qdisc:
		s += " in netns " + l.Entry.Netns
	case ledger.Pin:
		s = fmt.Sprintf("affinity of %s thread %d (was CPUs %s)", l.Entry.Name, l.Entry.PID, l.Entry.Mask)
	case ledger.VM:
		s = fmt.Sprintf("QEMU %s, pid %d", l.Entry.Name, l.Entry.PID)
	}
	s += fmt.Sprintf(" (%s, pid %d, is gone)", OwnerName(l.Owner), l.Owner.PID)
	if l.Busy != "" {
		s += "; kept: " + l.Busy
	}
	return s
}

// OwnerName names the process a ledger belongs to: its run, or its
// vnetbench command.
func OwnerName(o ledger.Owner) string {
	if o.Run != "" {
		return "run " + o.Run
	}
	if len(o.Argv) > 1 {
		return "vnetbench " + o.Argv[1]
	}
	return "vnetbench"
}

// LeftoversHint is what a failed run says about leftovers.
const LeftoversHint = "'vnetbench doctor' lists what killed runs left behind (network namespaces, taps, directories, VMs) and 'vnetbench doctor --clean' removes it"

// Ledgers is what doctor reads in the ledger directory (ledger.Path).
type Ledgers struct {
	// Leftovers is what the ledgers of processes that are gone list,
	// each checked: gone already, in use, or not provably the run's own
	// (Busy), else removable.
	Leftovers []Leftover
	Settled   []ledger.Settled // their ledgers that list nothing
	Skipped   []ledger.Skipped // files there that are no ledger
}

// ReadLedgers reads the ledgers and checks what they list.
func ReadLedgers() Ledgers {
	fd, _ := ledger.Scan(ledger.Path())
	u := scanUsers()
	ls := Ledgers{Settled: fd.Settled, Skipped: fd.Skipped}
	for _, o := range fd.Orphans {
		l := Leftover{Orphan: o}
		l.Gone, l.Busy = u.check(o)
		ls.Leftovers = append(ls.Leftovers, l)
	}
	return ls
}

// Ended counts the ledgers of processes that are gone that list nothing
// that still exists: the settled ones, and those whose leftovers are all
// gone already. Clean removes their files.
func (ls Ledgers) Ended() int {
	gone := map[string]bool{}
	for _, l := range ls.Leftovers {
		g, seen := gone[l.File]
		gone[l.File] = l.Gone && (g || !seen)
	}
	n := len(ls.Settled)
	for _, g := range gone {
		if g {
			n++
		}
	}
	return n
}

// FindLeftovers lists what the ledgers of processes that are gone still
// record, each checked (ReadLedgers).
func FindLeftovers() []Leftover { return ReadLedgers().Leftovers }

// Cleaned is what Clean removed and what it found after.
type Cleaned struct {
	Done    []Leftover       // the leftovers it removed
	Ledgers []ledger.Settled // the settled ledgers it removed
	Found   Ledgers          // the last check's
}

// Clean removes what the ledgers of processes that are gone record and no
// process uses (CleanLeftovers), then their settled ledgers' files. The
// processes the ledgers record (a killed run's QEMU that outlived it) end
// first; then everything is checked again, so what only they held (a
// tap's queue, a socket directory, the namespace) goes in the same clean
// instead of being kept as in use; and once more after the removals, so
// what went with them leaves no ledger line behind.
func Clean() (Cleaned, error) {
	var c Cleaned
	found := FindLeftovers()
	var procs []Leftover
	for _, l := range found {
		if l.Entry.Kind == ledger.VM {
			procs = append(procs, l)
		}
	}
	done, err := CleanLeftovers(procs)
	if len(done) > 0 {
		found = FindLeftovers()
	}
	rest, err2 := CleanLeftovers(found)
	c.Done = append(done, rest...)
	if len(rest) > 0 {
		// What was kept but went with what was removed (a tap not
		// marked as the run's, inside the run's namespace) is gone now:
		// its ledger line goes too.
		var gone []Leftover
		for _, l := range FindLeftovers() {
			if l.Gone {
				gone = append(gone, l)
			}
		}
		CleanLeftovers(gone)
	}
	errs := []error{err, err2}
	for _, s := range ReadLedgers().Settled {
		if err := ledger.RemoveSettled(s); err != nil {
			errs = append(errs, fmt.Errorf("remove ledger: %w", err))
			continue
		}
		c.Ledgers = append(c.Ledgers, s)
	}
	c.Found = ReadLedgers()
	return c, errors.Join(errs...)
}

// CleanLeftovers removes the leftovers that are neither Busy nor Gone,
// last recorded first (a tap before its namespace), records each removed
// or gone one in its ledger, and returns those it removed.
func CleanLeftovers(ls []Leftover) ([]Leftover, error) {
	var done []Leftover
	var errs []error
	for i := len(ls) - 1; i >= 0; i-- {
		l := ls[i]
		if l.Busy != "" || l.Entry.Kind == ledger.Qdisc {
			continue
		}
		if !l.Gone {
			if err := remove(l.Orphan); err != nil {
				errs = append(errs, fmt.Errorf("remove %s %s: %w", l.Entry.Kind, l.Entry.Name, err))
				continue
			}
			done = append(done, l)
		}
		ledger.Resolved(l.Orphan)
	}
	// A qdisc goes with its device or namespace.
	for _, l := range ls {
		if l.Entry.Kind == ledger.Qdisc && !netnsExists(l.Entry.Netns) {
			ledger.Resolved(l.Orphan)
		}
	}
	return done, errors.Join(errs...)
}

func netnsExists(name string) bool {
	_, err := os.Lstat(filepath.Join(hostnet.NetnsDir, name))
	return err == nil
}

// remove removes one leftover that check found removable.
func remove(o ledger.Orphan) error {
	e := o.Entry
	switch e.Kind {
	case ledger.Netns:
		return hostnet.DeleteNamed(e.Name)
	case ledger.Tap:
		if !netnsExists(e.Netns) {
			return nil
		}
		ns, err := hostnet.OpenNetns(e.Netns)
		if err != nil {
			return err
		}
		defer ns.Close()
		return ns.DeleteLink(e.Name)
	case ledger.Dir:
		return os.RemoveAll(e.Name)
	case ledger.Pin:
		set, err := parseMask(e.Mask)
		if err != nil {
			return err
		}
		if err := unix.SchedSetaffinity(e.PID, &set); err != nil && !errors.Is(err, unix.ESRCH) {
			return err
		}
		return nil
	case ledger.VM:
		if err := syscall.Kill(e.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
		for range 50 {
			if st, err := ledger.StartTime(e.PID); err != nil || st != e.Start {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return fmt.Errorf("QEMU pid %d did not end after SIGKILL", e.PID)
	}
	return fmt.Errorf("unknown kind %q", e.Kind)
}

// users is who uses what on the host, read once from /proc.
type users struct {
	netns   map[uint64]int      // a network namespace's inode -> a process in it or holding it
	paths   map[string]int      // an open file's or working directory's path -> a process
	sockets []string            // bound unix socket paths
	mounts  map[uint64][]string // an nsfs inode -> its mount points
}

// scanUsers reads /proc: every process's network namespace, open files
// and working directory, the unix sockets and nsfs mounts. (A tap's
// readers are its queues, which netlink counts.)
func scanUsers() *users {
	u := &users{netns: map[uint64]int{}, paths: map[string]int{}, mounts: map[uint64][]string{}}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if t, err := os.Readlink(filepath.Join(p, "ns", "net")); err == nil {
			u.addNetns(t, pid)
		}
		if t, err := os.Readlink(filepath.Join(p, "cwd")); err == nil {
			u.paths[t] = pid
		}
		fds, _ := filepath.Glob(filepath.Join(p, "fd", "*"))
		for _, fd := range fds {
			t, err := os.Readlink(fd)
			switch {
			case err != nil:
			case strings.HasPrefix(t, "net:["):
				u.addNetns(t, pid)
			case strings.HasPrefix(t, "/"):
				u.paths[t] = pid
			}
		}
	}
	u.sockets = unixSocketPaths()
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) > 4 && strings.HasPrefix(f[3], "net:[") {
				ino, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(f[3], "net:["), "]"), 10, 64)
				u.mounts[ino] = append(u.mounts[ino], f[4])
			}
		}
	}
	return u
}

func (u *users) addNetns(link string, pid int) {
	if ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "net:["), "]"), 10, 64); err == nil {
		u.netns[ino] = pid
	}
}

// under returns a process using a path at or under dir, and the path.
func (u *users) under(dir string) (int, string) {
	for p, pid := range u.paths {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return pid, p
		}
	}
	for _, s := range u.sockets {
		if strings.HasPrefix(s, dir+"/") {
			return -1, s
		}
	}
	return 0, ""
}

// check tells whether o is gone, or why it must stay.
func (u *users) check(o ledger.Orphan) (gone bool, busy string) {
	e := o.Entry
	switch e.Kind {
	case ledger.Netns:
		return u.checkNetns(e)
	case ledger.Tap:
		return checkTap(o, u)
	case ledger.Qdisc:
		if !netnsExists(e.Netns) {
			return true, ""
		}
		return false, "it goes with netns " + e.Netns
	case ledger.Dir:
		return u.checkDir(o)
	case ledger.Pin, ledger.VM:
		st, err := ledger.StartTime(e.PID)
		if err != nil || e.Start == 0 || st != e.Start {
			return true, "" // that thread or process is gone (its pid may be another's now)
		}
		return false, ""
	}
	return false, fmt.Sprintf("unknown kind %q", e.Kind)
}

func (u *users) checkNetns(e ledger.Entry) (bool, string) {
	var st unix.Stat_t
	path := filepath.Join(hostnet.NetnsDir, e.Name)
	if err := unix.Stat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return true, "" // gone: only its ledger line is left
		}
		return false, fmt.Sprintf("%v", err)
	}
	if !hostnet.IsNetnsMount(path) {
		// A run killed while it deleted the namespace (unmounted, the
		// empty file it was mounted on left) or while it made it (the
		// file made, not mounted yet): no namespace to prove.
		if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size == 0 {
			return false, ""
		}
		return false, "not a network namespace: " + path + " is no nsfs mount and not the empty file one leaves"
	}
	switch {
	case e.Ino == 0:
		return false, "the run was killed before it recorded the namespace's identity: not provably its own (ip netns del " + e.Name + " removes it)"
	case st.Ino != e.Ino:
		return false, "another namespace has its name now"
	case u.netns[st.Ino] != 0:
		return false, fmt.Sprintf("process %d is inside it or holds it open", u.netns[st.Ino])
	}
	if ms := slices.DeleteFunc(slices.Clone(u.mounts[st.Ino]), func(m string) bool { return m == path }); len(ms) > 0 {
		return false, "it is mounted at " + ms[0] + " too"
	}
	return false, ""
}

func checkTap(o ledger.Orphan, u *users) (bool, string) {
	e := o.Entry
	if !netnsExists(e.Netns) {
		return true, ""
	}
	ns, err := hostnet.OpenNetns(e.Netns)
	if err != nil {
		return false, err.Error()
	}
	defer ns.Close()
	var gone bool
	var busy string
	err = ns.Do(func() error {
		l, err := netlink.LinkByName(e.Name)
		if err != nil {
			gone = errors.As(err, new(netlink.LinkNotFoundError))
			return err
		}
		if a := l.Attrs(); a.Alias != ledger.AliasPrefix+o.Owner.ID {
			busy = fmt.Sprintf("its ifalias %q does not name the run's ledger", a.Alias)
		}
		return nil
	})
	if err != nil && !gone {
		return false, err.Error()
	}
	if gone || busy != "" {
		return gone, busy
	}
	// Whether its link is up or down: a reader holds it.
	switch r, err := ns.TapReaders(e.Name); {
	case err != nil:
		return false, err.Error()
	case r > 0:
		return false, "a reader holds a queue of it"
	}
	return false, ""
}

func (u *users) checkDir(o ledger.Orphan) (bool, string) {
	dir := o.Entry.Name
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, ""
	}
	if err != nil || !fi.IsDir() {
		return false, "it is not a directory now"
	}
	f, err := os.OpenFile(filepath.Join(dir, ledger.MarkerFile), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false, "it has no " + ledger.MarkerFile + " naming the run's ledger: not provably its own"
	}
	b := make([]byte, 64)
	n, _ := f.Read(b)
	f.Close()
	if strings.TrimSpace(string(b[:n])) != o.Owner.ID {
		return false, "its " + ledger.MarkerFile + " names another ledger"
	}
	switch pid, p := u.under(dir); {
	case pid > 0:
		return false, fmt.Sprintf("process %d has %s open", pid, p)
	case pid < 0:
		return false, "a process listens on " + p
	}
	return false, ""
}

// unixSocketPaths lists the paths of the bound unix sockets of the
// harness's network namespace (/proc/net/unix).
func unixSocketPaths() []string {
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 8 && strings.HasPrefix(f[7], "/") {
			out = append(out, f[7])
		}
	}
	return out
}
