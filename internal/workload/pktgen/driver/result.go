package driver

import (
	"errors"
	"strings"

	"github.com/vnetbench/vnetbench/perfparse"
)

// ParseResult reads the Result of one /proc/net/pktgen/DEV text with
// perfparse.ParsePktgen. A Result that is not a finished run (e.g.
// `Result: Idle`) returns OK false with Msg set and no error; text that is
// not a pktgen device file is an error.
func ParseResult(text string) (ThreadResult, error) {
	tr := ThreadResult{Raw: text}
	d, err := perfparse.ParsePktgen(strings.NewReader(text))
	if err != nil {
		return tr, err
	}
	if d.Result == nil {
		return tr, errors.New("no Result line")
	}
	return fromResult(d.Result, text)
}

// fromResult is a ThreadResult from a parsed Result line.
func fromResult(r *perfparse.PktgenResult, raw string) (ThreadResult, error) {
	tr := ThreadResult{Raw: raw, Msg: r.Msg, status: r.Status}
	if !r.OK || !r.Run {
		if r.Msg == "" {
			return tr, errors.New("no Result line")
		}
		return tr, nil
	}
	tr.OK = true
	tr.Msg = ""
	tr.Usec, tr.Packets, tr.PPS, tr.BitsPerSec, tr.Errors = r.Usec, r.Packets, r.PPS, r.BitsPerSec, r.Errors
	return tr, nil
}
