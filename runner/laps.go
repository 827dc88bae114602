package runner

import (
	"strconv"
	"strings"
	"time"
)

// laps times a sample's phases one after another: each lap is the time
// since the previous one (or since the cell's start). A sample carries
// them in its label phases_s ("guest 0.00, setup 0.41, ..."), so a cell
// whose overhead grows says where it went.
type laps struct {
	last  time.Time
	names []string
	ds    []time.Duration
}

func newLaps(start time.Time) *laps { return &laps{last: start} }

// lap ends the phase name now.
func (l *laps) lap(name string) {
	now := time.Now()
	l.names = append(l.names, name)
	l.ds = append(l.ds, now.Sub(l.last))
	l.last = now
}

// String is the phases in order, seconds with two decimals.
func (l *laps) String() string {
	var b strings.Builder
	for i, n := range l.names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n + " " + strconv.FormatFloat(l.ds[i].Seconds(), 'f', 2, 64))
	}
	return b.String()
}
