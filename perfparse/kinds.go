package perfparse

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// Kinds lists the input kinds Parse accepts, in a stable order. "auto"
// detects the kind from the content.
func Kinds() []string {
	return []string{"perf-stat", "perf-report", "pktgen", "kpktgend", "pktgen-script", "iperf3", "netdev", "tc", "trafgen", "testpmd", "auto"}
}

// UnknownKindError is a kind Parse does not know: bad input (class
// fault.ErrInput).
type UnknownKindError struct{ Kind string }

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("unknown kind %q; kinds: %s", e.Kind, strings.Join(Kinds(), ", "))
}

// Is makes an unknown kind bad input.
func (e *UnknownKindError) Is(target error) bool { return target == fault.ErrInput }

// Parse reads one input of the given kind and returns its record:
// *PerfStat, *PerfReport, *PktgenDevice, *Kpktgend, *PktgenScript,
// *Iperf3, []NetdevStats (/proc/net/dev), []Qdisc, *Trafgen or *Testpmd. name (may be
// "") is put into syntax errors. "auto" detects the kind (see Detect); a
// perf report is read whole here, use NewPerfReportReader to stream.
func Parse(kind, name string, r io.Reader) (any, error) {
	if kind == "auto" {
		data, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		kind = Detect(data)
		if kind == "" {
			return nil, WithFile(&SyntaxError{Msg: "cannot tell what this is; name the kind: " + strings.Join(Kinds()[:len(Kinds())-1], ", ")}, name)
		}
		r = bytes.NewReader(data)
	}
	var v any
	var err error
	switch kind {
	case "perf-stat":
		v, err = ParsePerfStat(r)
	case "perf-report":
		v, err = ParsePerfReport(r)
	case "pktgen":
		v, err = ParsePktgen(r)
	case "kpktgend":
		v, err = ParseKpktgend(r)
	case "pktgen-script":
		v, err = ParsePktgenScript(r)
	case "iperf3":
		v, err = ParseIperf3(r)
	case "netdev":
		v, err = ParseProcNetDev(r)
	case "tc":
		v, err = ParseTCQdisc(r)
	case "trafgen":
		v, err = ParseTrafgen(r)
	case "testpmd":
		v, err = ParseTestpmd(r)
	default:
		return nil, &UnknownKindError{kind}
	}
	if err != nil {
		return nil, WithFile(err, name)
	}
	return v, nil
}

var (
	// A perf report row whose "#" header was cut: "  33.91%  cmd  dso  [k] sym".
	reDetectReportRow = regexp.MustCompile(`(?m)^\s*[0-9]+[.,][0-9]+%\s+\S.*\s\[[k.guH]\] \S`)
	reDetectStatRow   = regexp.MustCompile(`(?m)^\s*(> ?)*\s*([0-9][0-9.,' ]*|<not (supported|counted)>)\s+(msec\s+)?[a-z][-a-z0-9_:/]*\s*(#|$)`)
)

// Detect guesses the kind of an input from its content ("" when unsure).
func Detect(data []byte) string {
	head := data
	if len(head) > 64<<10 {
		head = head[:64<<10]
	}
	s := string(head)
	t := strings.TrimSpace(s)
	first := "" // first line that is not blank or a "#" comment
	for _, l := range strings.Split(t, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			first = l
			break
		}
	}
	switch {
	case strings.HasPrefix(first, "{") && strings.Contains(s, `"counter-value"`):
		return "perf-stat"
	case strings.HasPrefix(t, "[") && strings.Contains(s, `"kind"`) && strings.Contains(s, `"handle"`):
		return "tc"
	case strings.HasPrefix(t, "{") && (strings.Contains(s, `"intervals"`) || strings.Contains(s, `"test_start"`) || strings.Contains(s, `"error"`)):
		return "iperf3"
	case strings.Contains(s, "NIC statistics for port") || strings.Contains(s, "Forward statistics for port") ||
		strings.Contains(s, "Accumulated forward statistics"):
		return "testpmd"
	case strings.Contains(s, "Result device:") || regexp.MustCompile(`(?m)^\s*Device: \S+`).MatchString(s):
		return "pktgen-script"
	case strings.Contains(s, "Params:") && strings.Contains(s, "Result:"), strings.HasPrefix(t, "Params:"):
		return "pktgen"
	case strings.Contains(s, "Running:") && strings.Contains(s, "Stopped:"):
		return "kpktgend"
	case strings.Contains(s, "packets outgoing") || strings.Contains(s, "packets to schedule"):
		return "trafgen"
	case strings.Contains(s, "Inter-|") || strings.Contains(s, "face |bytes"):
		return "netdev"
	case strings.Contains(s, "# Samples:") || strings.Contains(s, "# Overhead") || strings.Contains(s, "# Children") ||
		reDetectReportRow.MatchString(s):
		return "perf-report"
	case strings.Contains(s, "Performance counter stats") || strings.Contains(s, "seconds time elapsed") ||
		csvSep(first) != 0 || reDetectStatRow.MatchString(s):
		return "perf-stat"
	}
	return ""
}
