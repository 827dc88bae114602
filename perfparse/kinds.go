package perfparse

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// Kind is an input kind a Parser reads by name ("perf-stat"). perfparse
// has its own (perf stat, perf report, /proc/net/dev, tc) and defines the
// kinds of the workloads' tools (Pktgen, Iperf3, ...); each workload
// declares those it has (workload.Parser), and a Parser is built from
// them.
type Kind struct {
	Name string
	// Parse reads one input of the kind into its record.
	Parse func(r io.Reader) (any, error)
	// Detect reports whether an input looks like the kind: s is its
	// first 64 KiB, first its first line that is not blank or a "#"
	// comment. nil = never guessed (name the kind).
	Detect func(s, first string) bool
}

func parser[T any](f func(io.Reader) (T, error)) func(io.Reader) (any, error) {
	return func(r io.Reader) (any, error) { return f(r) }
}

// The kinds of the workloads' tools.
var (
	// PktgenKind is /proc/net/pktgen/DEV (ParsePktgen).
	PktgenKind = Kind{Name: "pktgen", Parse: parser(ParsePktgen), Detect: func(s, first string) bool {
		return strings.Contains(s, "Params:") && strings.Contains(s, "Result:") || strings.HasPrefix(strings.TrimSpace(s), "Params:")
	}}
	// KpktgendKind is /proc/net/pktgen/kpktgend_N (ParseKpktgend).
	KpktgendKind = Kind{Name: "kpktgend", Parse: parser(ParseKpktgend), Detect: func(s, _ string) bool {
		return strings.Contains(s, "Running:") && strings.Contains(s, "Stopped:")
	}}
	// PktgenScriptKind is what the kernel's samples/pktgen scripts print
	// (ParsePktgenScript).
	PktgenScriptKind = Kind{Name: "pktgen-script", Parse: parser(ParsePktgenScript), Detect: func(s, _ string) bool {
		return strings.Contains(s, "Result device:") || reDetectScriptDevice().MatchString(s)
	}}
	// Iperf3Kind is iperf3 --json (ParseIperf3).
	Iperf3Kind = Kind{Name: "iperf3", Parse: parser(ParseIperf3), Detect: func(s, _ string) bool {
		s = strings.TrimSpace(s)
		for strings.HasPrefix(s, "warning: ") || strings.HasPrefix(s, "iperf3: ") {
			_, s, _ = strings.Cut(s, "\n") // iperf3's messages on stderr
			s = strings.TrimSpace(s)
		}
		return strings.HasPrefix(s, "{") &&
			(strings.Contains(s, `"intervals"`) || strings.Contains(s, `"test_start"`) || strings.Contains(s, `"error"`))
	}}
	// TrafgenKind is trafgen's summary (ParseTrafgen).
	TrafgenKind = Kind{Name: "trafgen", Parse: parser(ParseTrafgen), Detect: func(s, _ string) bool {
		return strings.Contains(s, "packets outgoing") || strings.Contains(s, "packets to schedule") ||
			strings.Contains(s, "frames outgoing") // trafgen up to 0.5.7
	}}
	// TestpmdKind is dpdk-testpmd's port and forward statistics
	// (ParseTestpmd).
	TestpmdKind = Kind{Name: "testpmd", Parse: parser(ParseTestpmd), Detect: func(s, _ string) bool {
		return strings.Contains(s, "NIC statistics for port") || strings.Contains(s, "Forward statistics for port") ||
			strings.Contains(s, "Accumulated forward statistics")
	}}
)

// perfparse's own kinds. Detection asks the early ones (formats no tool
// output is mistaken for), then the tools' kinds, then the late ones
// (perf stat's text is recognized by little).
var (
	own = []Kind{
		{Name: "perf-stat", Parse: parser(ParsePerfStat)},
		{Name: "perf-report", Parse: parser(ParsePerfReport)},
		{Name: "netdev", Parse: parser(ParseProcNetDev)},
		{Name: "tc", Parse: parser(ParseTCQdisc)},
	}
	early = []Kind{
		{Name: "perf-stat", Detect: func(s, first string) bool {
			return strings.HasPrefix(first, "{") && (strings.Contains(s, `"counter-value"`) || isMetricOnlyJSONLine(first))
		}},
		{Name: "tc", Detect: func(s, _ string) bool {
			t := strings.TrimSpace(s)
			return strings.HasPrefix(t, "[") && strings.Contains(s, `"kind"`) && strings.Contains(s, `"handle"`)
		}},
	}
	late = []Kind{
		{Name: "netdev", Detect: func(s, first string) bool {
			return strings.Contains(s, "Inter-|") || strings.Contains(s, "face |bytes") ||
				isIPLinkText(strings.SplitN(s, "\n", 64)) || strings.HasPrefix(first, "[") && strings.Contains(s, `"ifname"`) ||
				first == "NIC statistics:" || first == "no stats available" // ethtool -S, which netdev refuses saying why
		}},
		{Name: "perf-report", Detect: func(s, first string) bool {
			return strings.Contains(s, "# Samples:") || strings.Contains(s, "# Overhead") || strings.Contains(s, "# Children") ||
				strings.HasPrefix(first, "Samples: ") && strings.Contains(first, ", Event count (approx.): ") ||
				reDetectReportRow().MatchString(s) || isReportColumnsLine(first) && strings.Contains(s, "%")
		}},
		{Name: "perf-stat", Detect: func(s, first string) bool {
			return strings.Contains(s, "Performance counter stats") || strings.Contains(s, "seconds time elapsed") ||
				reDetectStatInterval().MatchString(s) || reDetectStatMetricOnlyInterval().MatchString(s) ||
				csvSep(first) != "" || reDetectStatRow().MatchString(s) ||
				metricOnlySep(strings.SplitN(s, "\n", 64)) != ""
		}},
	}
)

// Parser reads inputs by kind name: perfparse's own kinds and those it is
// given.
type Parser struct {
	kinds []Kind // own, then the given ones
}

// NewParser returns a Parser of perfparse's own kinds and of tools, which
// Detect asks in the order given.
func NewParser(tools ...Kind) *Parser {
	return &Parser{kinds: append(append([]Kind(nil), own...), tools...)}
}

// Kinds lists the kind names Parse accepts: perfparse's own, the tools'
// in order, then "auto", which detects the kind from the content.
func (p *Parser) Kinds() []string {
	var out []string
	for _, k := range p.kinds {
		out = append(out, k.Name)
	}
	return append(out, "auto")
}

// Has reports whether Parse accepts kind.
func (p *Parser) Has(kind string) bool {
	return kind == "auto" || p.kind(kind) != nil
}

func (p *Parser) kind(name string) *Kind {
	for i := range p.kinds {
		if p.kinds[i].Name == name {
			return &p.kinds[i]
		}
	}
	return nil
}

// UnknownKindError is a kind a Parser does not know (bad input for a
// caller that classifies errors).
type UnknownKindError struct {
	Kind  string
	Kinds []string // those it knows
}

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("unknown kind %q; kinds: %s", e.Kind, strings.Join(e.Kinds, ", "))
}

// Parse reads one input of the given kind and returns its record:
// *PerfStat, *PerfReport, []NetdevStats (/proc/net/dev), []Qdisc, or the
// record of a tool's kind (*PktgenDevice, *Iperf3, ...). name (may be "")
// is put into syntax errors. "auto" detects the kind (see Detect); a perf
// report is read whole here, use NewPerfReportReader to stream.
func (p *Parser) Parse(kind, name string, r io.Reader) (any, error) {
	if kind == "auto" {
		data, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		kind = p.Detect(data)
		if kind == "" {
			names := p.Kinds()
			return nil, WithFile(&SyntaxError{Msg: "cannot tell what this is; name the kind: " + strings.Join(names[:len(names)-1], ", ")}, name)
		}
		r = bytes.NewReader(data)
	}
	k := p.kind(kind)
	if k == nil {
		return nil, &UnknownKindError{Kind: kind, Kinds: p.Kinds()}
	}
	v, err := k.Parse(r)
	if err != nil {
		return nil, WithFile(err, name)
	}
	return v, nil
}

var (
	// A perf report row whose "#" header was cut: "  33.91%  cmd  dso  [k] sym".
	reDetectReportRow    = lazyRegexp(`(?m)^\s*(?:[+-]\s+)?[0-9]+[.,][0-9]+%\s+\S.*\s\[[k.guH]\] \S`)
	reDetectStatRow      = lazyRegexp(`(?m)^\s*(> ?)*\s*([0-9][0-9.,' ]*|<not (supported|counted)>)\s+(msec\s+)?[a-z][-a-z0-9_:/]*\s*(#|$)`)
	reDetectScriptDevice = lazyRegexp(`(?m)^\s*Device: \S+`)
	// perf stat -I's column header ("#  time  CPU  counts unit events").
	reDetectStatInterval = lazyRegexp(`(?m)^\s*#\s+time\s+(.*\s)?counts\s+unit\s+events\s*$`)
	// perf stat --metric-only -I's header: "#           time  GHz ...".
	reDetectStatMetricOnlyInterval = lazyRegexp(`(?m)^\s*#\s+time\s+\S`)
)

// Detect guesses the kind of an input from its content ("" when unsure).
func (p *Parser) Detect(data []byte) string {
	head := data
	if len(head) > 64<<10 {
		head = head[:64<<10]
	}
	s := string(head)
	first := "" // first line that is not blank or a "#" comment
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			first = l
			break
		}
	}
	for _, set := range [][]Kind{early, p.kinds[len(own):], late} {
		for _, k := range set {
			if k.Detect != nil && k.Detect(s, first) {
				return k.Name
			}
		}
	}
	return ""
}
