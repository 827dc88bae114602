package runner

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/scenarios"
)

// Pure argv builders for the tools the runner drives. They never build a
// shell string; reproduce.sh quotes their output with proc.Quote.

// perfSelector returns perf's thread selector: -p for whole processes,
// -t for a list of thread ids.
func perfSelector(tids []int, wholeProcess bool) []string {
	flag := "-t"
	if wholeProcess {
		flag = "-p"
	}
	return []string{flag, joinInts(tids)}
}

// PerfStatArgs is `perf stat -x, -e EVENTS {-t TIDS|-p PIDS} -o OUT`. perf
// counts until it receives SIGINT (the end of the window).
func PerfStatArgs(events []string, tids []int, wholeProcess bool, out string) []string {
	a := []string{"perf", "stat", "-x,", "--no-big-num"}
	if len(events) > 0 {
		a = append(a, "-e", strings.Join(events, ","))
	}
	a = append(a, perfSelector(tids, wholeProcess)...)
	return append(a, "-o", out)
}

// PerfRecordArgs is `perf record -o OUT -F FREQ [-g] {-t TIDS|-p PIDS}`,
// stopped with SIGINT at the end of the window.
func PerfRecordArgs(r scenarios.PerfRecord, tids []int, wholeProcess bool, out string) []string {
	a := []string{"perf", "record", "-q", "-o", out}
	if r.FreqHz > 0 {
		a = append(a, "-F", strconv.Itoa(r.FreqHz))
	}
	if r.CallGraph {
		a = append(a, "-g")
	}
	return append(a, perfSelector(tids, wholeProcess)...)
}

// PerfReportArgs is `perf report -i IN --stdio --no-children --sort symbol,dso`
// (top N is cut by the parser).
func PerfReportArgs(in string) []string {
	return []string{"perf", "report", "-i", in, "--stdio", "--no-children", "--sort", "dso,symbol"}
}

// Addresses of the point-to-point link between the netns and the guest.
const (
	HostIP    = "10.0.0.1"
	GuestIP   = "10.0.0.2"
	PrefixLen = 24
	GuestMAC  = "52:54:00:12:34:56"
)

// TrafgenConfig is trafgen's packet configuration for one UDP frame of
// pktSize bytes (without FCS) from the tap (srcMAC, HostIP) to the guest.
func TrafgenConfig(pktSize int, srcMAC, dstMAC string) string {
	if pktSize < 42 {
		pktSize = 42
	}
	fill := pktSize - 14 - 20 - 8
	return fmt.Sprintf("{ eth(da=%s, sa=%s), ipv4(sa=%s, da=%s), udp(sp=9, dp=9), fill(0x00, %d) }\n",
		dstMAC, srcMAC, HostIP, GuestIP, fill)
}

// TrafgenArgs runs trafgen on dev with the config file cfg. It runs until
// SIGINT (the runner bounds it by the duration). --no-sock-mem and
// --notouch-irq keep trafgen from changing host-wide settings.
func TrafgenArgs(t scenarios.Trafgen, dev, cfg string) []string {
	cpus := t.CPUs
	if cpus <= 0 {
		cpus = 1
	}
	a := []string{"trafgen", "--dev", dev, "--conf", cfg, "--cpus", strconv.Itoa(cpus), "--no-sock-mem", "--notouch-irq"}
	if t.Rate != "" {
		a = append(a, "--rate", t.Rate)
	}
	return a
}

// Iperf3Args is the iperf3 client against the guest's server, JSON output.
func Iperf3Args(c scenarios.Iperf3, dst string) []string {
	d := c.Duration
	if d <= 0 {
		d = 10 * time.Second
	}
	a := []string{"iperf3", "-c", dst, "-t", secs(d), "--json"}
	if c.Parallel > 1 {
		a = append(a, "-P", strconv.Itoa(c.Parallel))
	}
	if c.Reverse {
		a = append(a, "-R")
	}
	if c.Omit > 0 {
		a = append(a, "-O", secs(c.Omit))
	}
	if c.Protocol == "udp" {
		a = append(a, "-u")
	}
	if c.Bitrate != "" {
		a = append(a, "-b", c.Bitrate)
	}
	return a
}

// secs formats a duration as whole seconds (at least 1), as iperf3 wants.
func secs(d time.Duration) string {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return strconv.Itoa(s)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
