package vminit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// BootProfiled reports whether the kernel was booted for a boot profile:
// initcall_debug on its command line (/proc/cmdline).
func BootProfiled() bool {
	b, _ := os.ReadFile("/proc/cmdline")
	return Profiled(string(b))
}

// Profiled is BootProfiled for a command line already read.
func Profiled(cmdline string) bool {
	return strings.Contains(" "+strings.TrimSpace(cmdline)+" ", " initcall_debug ")
}

// PrintBootProfile writes the boot profile of a kernel booted with
// initcall_debug to w, from its log (/dev/kmsg): BootProfile's lines. A
// VM's /init calls it after its boot, so that printing does not slow the
// boot; boot with log_buf_len=8M so that the log keeps every initcall.
func PrintBootProfile(w io.Writer, min time.Duration) {
	for _, l := range BootProfile(readKmsg(), min) {
		fmt.Fprintln(w, l)
	}
}

// readKmsg returns the kernel log's records as /dev/kmsg gives them
// ("PRIO,SEQ,USEC,FLAGS;MESSAGE"), oldest first.
func readKmsg() []string {
	// A raw non-blocking fd: an *os.File would wait in Go's poller for
	// records that never come instead of returning EAGAIN at the end.
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var recs []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EPIPE) {
			continue // records overwritten before we read them
		}
		if err != nil || n == 0 {
			return recs
		}
		recs = append(recs, strings.SplitN(string(buf[:n]), "\n", 2)[0])
	}
}

// BootProfile turns kernel log records (/dev/kmsg's form) into a boot
// profile, "boot profile: SECONDS (+GAP) MESSAGE" lines: where the boot
// spent its time, kept short because a nested guest's console prints a
// line in a tenth of a second. It keeps the initcalls that took min or
// more and the messages that came min or more after the record before
// them (the gap is the time the work before took), always the kernel's
// "Run /init as init process" (where the kernel hands over to /init: the
// time from there to /init's own first line is the init program's start),
// and ends with the number of initcalls and their total time. The
// handing over comes first, before the lines in time order: a guest
// powered off while its console still prints the profile (a short cell)
// has shown the number that times its init program.
func BootProfile(records []string, min time.Duration) []string {
	var out []string
	var run string
	var n int
	var total time.Duration
	var last int64
	for _, r := range records {
		head, msg, ok := strings.Cut(r, ";")
		if !ok {
			continue
		}
		f := strings.Split(head, ",")
		if len(f) < 3 {
			continue
		}
		us, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			continue
		}
		gap := time.Duration(us-last) * time.Microsecond
		last = us
		w := strings.Fields(msg)
		keep := gap >= min
		if len(w) == 7 && w[0] == "initcall" && w[2] == "returned" && w[6] == "usecs" {
			d, err := strconv.ParseInt(w[5], 10, 64)
			if err != nil {
				continue
			}
			n++
			total += time.Duration(d) * time.Microsecond
			keep = time.Duration(d)*time.Microsecond >= min
		}
		line := fmt.Sprintf("boot profile: %d.%03d (+%.3f) %s", us/1e6, us%1e6/1e3, gap.Seconds(), msg)
		switch {
		case strings.HasPrefix(msg, "Run ") && strings.HasSuffix(msg, " as init process"):
			run = line
		case keep && (len(w) == 0 || w[0] != "calling"):
			out = append(out, line)
		}
	}
	if run != "" {
		out = append([]string{run}, out...)
	}
	return append(out, fmt.Sprintf("boot profile: %d initcalls in %.3fs", n, total.Seconds()))
}
