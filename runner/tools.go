package runner

import (
	"strconv"
	"strings"

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

// PerfReportArgs is `perf report -i IN --stdio --no-children --sort
// dso,symbol`, or for a record with call graphs `--children -g none`: each
// symbol's share with its callees (Children) beside its own (Self),
// without printing the chains (top N is cut by the parser).
func PerfReportArgs(in string, children bool) []string {
	if children {
		return []string{"perf", "report", "-i", in, "--stdio", "--children", "-g", "none", "--sort", "dso,symbol"}
	}
	return []string{"perf", "report", "-i", in, "--stdio", "--no-children", "--sort", "dso,symbol"}
}

// Addresses of the point-to-point link between the netns and the guest.
const (
	HostIP    = "10.0.0.1"
	GuestIP   = "10.0.0.2"
	PrefixLen = 24
	GuestMAC  = "52:54:00:12:34:56"
)

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
