package pktgen

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A small local reader of a device file's Result lines. The full parser of
// /proc/net/pktgen files (Params, Current) is perfparse.ParsePktgen; this
// one keeps runner/pktgen free of a dependency on a package still moving.
var (
	resultOKRe   = regexp.MustCompile(`^Result: OK: (\d+)\([^)]*\) usec, (\d+) \(`)
	resultRateRe = regexp.MustCompile(`^\s*(\d+)pps \d+Mb/sec \((\d+)bps\) errors: (\d+)`)
)

// ParseResult reads the Result of one /proc/net/pktgen/DEV text. A Result
// that is not OK (e.g. `Result: Idle`) returns OK false with Msg set and no
// error; a file without a Result line is an error.
func ParseResult(text string) (ThreadResult, error) {
	tr := ThreadResult{Raw: text}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, " \r")
		if !strings.HasPrefix(l, "Result: ") {
			continue
		}
		m := resultOKRe.FindStringSubmatch(l)
		if m == nil {
			tr.Msg = strings.TrimPrefix(l, "Result: ")
			return tr, nil
		}
		tr.OK = true
		tr.Usec, _ = strconv.ParseUint(m[1], 10, 64)
		tr.Packets, _ = strconv.ParseUint(m[2], 10, 64)
		if i+1 >= len(lines) {
			return tr, errors.New("result line without rate line")
		}
		r := resultRateRe.FindStringSubmatch(lines[i+1])
		if r == nil {
			return tr, fmt.Errorf("unexpected rate line %q", strings.TrimSpace(lines[i+1]))
		}
		pps, _ := strconv.ParseUint(r[1], 10, 64)
		bps, _ := strconv.ParseUint(r[2], 10, 64)
		tr.PPS, tr.BitsPerSec = float64(pps), float64(bps)
		tr.Errors, _ = strconv.ParseUint(r[3], 10, 64)
		return tr, nil
	}
	return tr, errors.New("no Result line")
}
