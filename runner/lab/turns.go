package lab

import (
	"context"
	"sync"
)

// turns lets the labs of one run boot side by side and measure one at a
// time (labvm.Turns). A lab is admitted (its VM may boot) while fewer
// than limit labs are live and no lab measures; it is granted the turn
// when every other live lab is paused ready to measure (Ready) or gone,
// the first ready one in the scenario's label order. It keeps the turn
// until its lab VM ends (set working: its import, a second boot) or it
// is gone. So no lab boots, sets up or imports beside a measuring one.
// Once the run ends (ended closed: an interrupt, or a lab's error that
// stops the others) no lab is admitted or granted the turn.
type turns struct {
	mu     sync.Mutex
	ended  <-chan struct{}
	order  []string // labels in turn order
	limit  int      // labs live at once
	state  map[string]labState
	admits map[string]chan struct{}
	grants map[string]chan struct{}
	holder string // the label measuring ("" = none)
}

type labState int

const (
	queued    labState = iota // not admitted yet
	working                   // admitted: booting, setting up, importing
	ready                     // paused, ready to measure
	measuring                 // its turn
	gone                      // finished or failed
)

func newTurns(ended <-chan struct{}, order []string, limit int) *turns {
	t := &turns{ended: ended, order: order, limit: max(limit, 1), state: map[string]labState{},
		admits: map[string]chan struct{}{}, grants: map[string]chan struct{}{}}
	for _, l := range order {
		t.admits[l] = make(chan struct{})
	}
	return t
}

// enter waits until label's lab may boot; a run that ends first leaves.
func (t *turns) enter(ctx context.Context, label string) error {
	t.mu.Lock()
	t.next()
	admit := t.admits[label]
	t.mu.Unlock()
	select {
	case <-admit:
		return nil
	case <-ctx.Done():
		t.set(label, gone)
		return ctx.Err()
	}
}

// Ready is label's lab paused, ready to measure; the channel is closed
// on its turn.
func (t *turns) Ready(label string) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch := make(chan struct{})
	t.grants[label] = ch
	t.state[label] = ready
	t.next()
	return ch
}

// set moves label's lab to state, working (its lab VM is gone: its
// samples are imported next, or it boots again) or gone (finished or
// failed for good), and so gives up the turn; no other lab gets it while
// this one works.
func (t *turns) set(label string, state labState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.holder == label {
		t.holder = ""
	}
	t.state[label] = state
	t.next()
}

// next admits queued labs and grants the turn as far as the rules allow
// (t.mu held).
func (t *turns) next() {
	if t.holder != "" {
		return // a lab measures: nothing starts beside it
	}
	select {
	case <-t.ended:
		return // the run ends: no lab starts or measures
	default:
	}
	live, busy := 0, false
	for _, l := range t.order {
		switch t.state[l] {
		case working:
			live, busy = live+1, true
		case ready, measuring:
			live++
		}
	}
	for _, l := range t.order {
		if t.state[l] == queued && live < t.limit {
			t.state[l] = working
			close(t.admits[l])
			live, busy = live+1, true
		}
	}
	if busy {
		return
	}
	for _, l := range t.order {
		if t.state[l] == ready {
			t.state[l], t.holder = measuring, l
			close(t.grants[l])
			return
		}
	}
}
