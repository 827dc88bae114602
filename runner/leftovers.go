package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vnetbench/vnetbench/internal/hostnet"
)

// Leftover is something a run (or a probe) creates and removes at its
// end, found on the host: a killed harness leaves it behind. Names carry
// the creating process's pid (vnb-PID-..., vnbprobe-PID-N, vnb-probe-PID),
// so a leftover whose process is gone is told from one in use.
type Leftover struct {
	Kind  string // "netns", "tap" or "dir"
	Name  string // the namespace's or tap's name, the directory's path
	Owner int    // the pid in its name (0 = none)
	// Busy says why CleanLeftovers keeps it ("" = its owner is gone and
	// no process uses it).
	Busy string
}

func (l Leftover) String() string {
	s := l.Kind + " " + l.Name
	if l.Busy != "" {
		return s + " (kept: " + l.Busy + ")"
	}
	return s + " (its process is gone)"
}

// LeftoversHint is what a failed run says about leftovers.
const LeftoversHint = "'vnetbench doctor' lists what killed runs left behind (network namespaces, taps, socket directories) and 'vnetbench doctor --clean' removes it"

// FindLeftovers lists the vnb* network namespaces, the vnb* tun/tap
// devices of the harness's own namespace (runs make theirs inside their
// namespace) and the vnb-* directories in the temporary directory.
func FindLeftovers() []Leftover { return findLeftovers(hostnet.NetnsDir, os.TempDir()) }

func findLeftovers(netnsDir, tmpDir string) []Leftover {
	users := nsUsers()
	var out []Leftover
	ents, _ := os.ReadDir(netnsDir)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "vnb") {
			continue
		}
		l := Leftover{Kind: "netns", Name: e.Name(), Owner: ownerPID(e.Name())}
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(netnsDir, e.Name()), &st); err == nil && users[st.Ino] != 0 {
			l.Busy = fmt.Sprintf("process %d uses it", users[st.Ino])
		}
		out = append(out, l)
	}
	links, _ := netlink.LinkList()
	for _, ln := range links {
		a := ln.Attrs()
		if _, tap := ln.(*netlink.Tuntap); !tap || !strings.HasPrefix(a.Name, "vnb") {
			continue
		}
		l := Leftover{Kind: "tap", Name: a.Name, Owner: ownerPID(a.Name)}
		if a.OperState == netlink.OperUp {
			l.Busy = "a reader is attached"
		}
		out = append(out, l)
	}
	sockets := unixSocketPaths()
	dirs, _ := filepath.Glob(filepath.Join(tmpDir, "vnb-*"))
	for _, d := range dirs {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			continue
		}
		l := Leftover{Kind: "dir", Name: d, Owner: ownerPID(filepath.Base(d))}
		for _, s := range sockets {
			if strings.HasPrefix(s, d+"/") {
				l.Busy = "a process listens on " + s
				break
			}
		}
		out = append(out, l)
	}
	for i := range out {
		if l := &out[i]; l.Busy == "" && l.Owner != 0 && alive(l.Owner) {
			l.Busy = fmt.Sprintf("its process %d is running", l.Owner)
		}
	}
	return out
}

// CleanLeftovers removes the leftovers that are not Busy and returns
// them.
func CleanLeftovers(ls []Leftover) ([]Leftover, error) {
	var done []Leftover
	var errs []error
	for _, l := range ls {
		if l.Busy != "" {
			continue
		}
		var err error
		switch l.Kind {
		case "netns":
			err = hostnet.DeleteNamed(l.Name)
		case "tap":
			err = netlink.LinkDel(&netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: l.Name}})
		case "dir":
			err = os.RemoveAll(l.Name)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove %s %s: %w", l.Kind, l.Name, err))
			continue
		}
		done = append(done, l)
	}
	return done, errors.Join(errs...)
}

// ownerPID is the first all-digit part of a dash-separated name after its
// prefix ("vnb-123-ab" -> 123, "vnbprobe-123-4" -> 123), 0 when none.
func ownerPID(name string) int {
	parts := strings.Split(name, "-")
	for _, p := range parts[1:] {
		if n, err := strconv.Atoi(p); err == nil && n > 0 && p[0] != '0' {
			return n
		}
	}
	return 0
}

// alive reports whether a process with that pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// nsUsers maps the inode of every network namespace a process is in or
// holds open to one such process.
func nsUsers() map[uint64]int {
	users := map[uint64]int{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || pid == os.Getpid() {
			continue
		}
		links := []string{filepath.Join(p, "ns", "net")}
		fds, _ := filepath.Glob(filepath.Join(p, "fd", "*"))
		links = append(links, fds...)
		for _, l := range links {
			t, err := os.Readlink(l)
			if err != nil || !strings.HasPrefix(t, "net:[") {
				continue
			}
			if ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(t, "net:["), "]"), 10, 64); err == nil {
				users[ino] = pid
			}
		}
	}
	return users
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
