package driver

import "fmt"

// counterBracket holds Driver.Counters' reading from the moment the
// device's tx_dropped was read before the run.
type counterBracket struct {
	before map[string]uint64
	err    error
}

// openCounters reads Driver.Counters right after tx_dropped before the
// run (nothing when the Driver has none).
func (d *Driver) openCounters() counterBracket {
	if d.Counters == nil {
		return counterBracket{}
	}
	m, err := d.Counters()
	return counterBracket{before: m, err: err}
}

// close reads Driver.Counters right after tx_dropped after the run and
// puts the growth of each counter into res (res.Counters, or
// res.CountersErr).
func (b counterBracket) close(d *Driver, res *Result) {
	if d.Counters == nil {
		return
	}
	if b.err != nil {
		res.CountersErr = b.err
		return
	}
	after, err := d.Counters()
	if err != nil {
		res.CountersErr = err
		return
	}
	res.Counters = map[string]uint64{}
	for k, a := range after {
		b := b.before[k]
		if a < b {
			res.CountersErr = fmt.Errorf("counter %s went back from %d to %d", k, b, a)
			res.Counters = nil
			return
		}
		if a > b {
			res.Counters[k] = a - b
		}
	}
}
