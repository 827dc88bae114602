package perfparse

import (
	"io"
	"strings"
)

// Kpktgend is /proc/net/pktgen/kpktgend_N: the devices of one pktgen
// thread and the result of the last command written to it.
type Kpktgend struct {
	Running []string `json:"running"`
	Stopped []string `json:"stopped"`
	// Result is the text after "Result:" ("OK: add_device=eth0", "NA", an
	// error such as `No such parameter "x"`); OK is true when it starts
	// with "OK".
	Result string `json:"result"`
	OK     bool   `json:"ok"`
}

// ParseKpktgend parses /proc/net/pktgen/kpktgend_N.
func ParseKpktgend(r io.Reader) (*Kpktgend, error) {
	lines, err := readLines(r)
	if err != nil {
		return nil, err
	}
	k := &Kpktgend{Running: []string{}, Stopped: []string{}}
	var seenRun, seenStop bool
	for i, l := range lines {
		s := strings.TrimSpace(l)
		switch {
		case s == "":
		case strings.HasPrefix(s, "Running:"):
			k.Running, seenRun = strings.Fields(strings.TrimPrefix(s, "Running:")), true
		case strings.HasPrefix(s, "Stopped:"):
			k.Stopped, seenStop = strings.Fields(strings.TrimPrefix(s, "Stopped:")), true
		case strings.HasPrefix(s, "Result:"):
			k.Result = collapse(strings.TrimPrefix(s, "Result:"))
			k.OK = strings.HasPrefix(k.Result, "OK")
		case strings.HasPrefix(s, "VERSION-") || strings.HasPrefix(s, "PID:") || strings.HasPrefix(s, "Sleeping:") ||
			strings.HasPrefix(s, "Name:"):
			// header lines of old (2.6) kernels: "Name: kpktgend_0  max_before_softirq: 10000"
		default:
			return nil, errorf(i+1, "kpktgend: expected Running:, Stopped: or Result:, got %q", clip(s))
		}
	}
	if !seenRun || !seenStop {
		return nil, errorf(0, "kpktgend: missing the Running: and Stopped: lines (is this /proc/net/pktgen/kpktgend_N?)")
	}
	if k.Running == nil {
		k.Running = []string{}
	}
	if k.Stopped == nil {
		k.Stopped = []string{}
	}
	return k, nil
}

// PktgenScript is what the kernel's samples/pktgen/pktgen_sample*.sh
// scripts print after a run: for sample01 "Result device: DEV" followed by
// the whole device file, for the multi-thread samples "Device: DEV@N"
// followed by `grep -A2 "Result:"` of each device file.
type PktgenScript struct {
	Devices []PktgenScriptDevice `json:"devices"`
	// Messages are the other lines ("Running... ctrl^C to stop", "Done",
	// warnings), as printed.
	Messages []string `json:"messages,omitempty"`
}

// PktgenScriptDevice is one device's result; File is set when the script
// printed the whole device file.
type PktgenScriptDevice struct {
	Device string        `json:"device"`
	Result *PktgenResult `json:"result"`
	File   *PktgenDevice `json:"file,omitempty"`
}

// TotalPPS sums the devices' result rates (the threads' packets/s).
func (p *PktgenScript) TotalPPS() float64 {
	var s float64
	for _, d := range p.Devices {
		if d.Result != nil {
			s += d.Result.PPS
		}
	}
	return s
}

// ParsePktgenScript parses the printed output of a kernel pktgen sample
// script (stdout, optionally with stderr).
func ParsePktgenScript(r io.Reader) (*PktgenScript, error) {
	lines, err := readLines(r)
	if err != nil {
		return nil, err
	}
	out := &PktgenScript{Devices: []PktgenScriptDevice{}}
	var cur *PktgenScriptDevice
	for i := 0; i < len(lines); i++ {
		s := strings.TrimSpace(lines[i])
		switch {
		case s == "" || s == "--":
		case strings.HasPrefix(s, "Result device:") || strings.HasPrefix(s, "Device:"):
			_, dev, _ := strings.Cut(s, ":")
			out.Devices = append(out.Devices, PktgenScriptDevice{Device: strings.TrimSpace(dev)})
			cur = &out.Devices[len(out.Devices)-1]
		case cur != nil && strings.HasPrefix(s, "Params:"):
			d, next, err := parsePktgenLines(lines, i)
			if err != nil {
				return nil, err
			}
			cur.File, cur.Result = d, d.Result
			i = next - 1
		case cur != nil && strings.HasPrefix(s, "Result:"):
			res, last, err := pktgenResultAt(lines, i)
			if err != nil {
				return nil, err
			}
			cur.Result, i = res, last
		default:
			out.Messages = append(out.Messages, s)
		}
	}
	if len(out.Devices) == 0 {
		for _, m := range out.Messages {
			if strings.HasPrefix(m, "ERROR") {
				return nil, errorf(0, "pktgen script output: no results; the script failed: %s", clip(m))
			}
		}
		return nil, errorf(0, "pktgen script output: no \"Device:\" or \"Result device:\" lines")
	}
	for _, d := range out.Devices {
		if d.Result == nil {
			return nil, errorf(0, "pktgen script output: device %s has no Result", d.Device)
		}
	}
	return out, nil
}
