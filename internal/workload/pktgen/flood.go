package pktgen

import (
	"context"
	"time"

	pg "github.com/vnetbench/vnetbench/internal/workload/pktgen/driver"
)

// Flood is pktgen sending into a device outside a scenario's cells: the
// lab VM's own commands (runner/labvm's self-test and perf stress) ask the
// workload for it, and the workload drives its /proc/net/pktgen driver,
// which stays its own.
type Flood struct {
	Dev         string // the device (a tap) pktgen sends into
	Dst, DstMAC string // every packet's destination
	// Threads are kpktgend threads, one device queue each (0 or 1 = one,
	// the device itself).
	Threads int
	// Count is the packets per thread (0: until Duration ends).
	Count    uint64
	Duration time.Duration
}

// FloodResult is what a flood sent.
type FloodResult struct {
	Packets, Errors uint64
	PPS             float64
	// Stopped says its Duration or its context ended it before Count.
	Stopped bool
}

// FloodRun is a flood that is sending.
type FloodRun struct{ s *pg.Session }

func (f Flood) config() pg.Config {
	c := pg.Config{Mode: pg.ModeSimple, Dev: f.Dev, Threads: f.Threads, Dst: f.Dst, DstMAC: f.DstMAC,
		Count: f.Count, CountSet: true, Duration: f.Duration}
	if f.Threads > 1 {
		c.Mode, c.Dst = pg.ModeMultiqueue, f.Dst+"/32"
	}
	return c
}

// Start starts the flood and returns once pktgen sends.
func (f Flood) Start(ctx context.Context) (*FloodRun, error) {
	s, err := (&pg.Driver{}).Start(ctx, f.config())
	if err != nil {
		return nil, err
	}
	return &FloodRun{s: s}, nil
}

// Run sends the flood to its end.
func (f Flood) Run(ctx context.Context) (FloodResult, error) {
	r, err := f.Start(ctx)
	if err != nil {
		return FloodResult{}, err
	}
	return r.Wait(ctx)
}

// Stop ends the flood early (Wait then returns what it sent).
func (r *FloodRun) Stop() error { return r.s.Stop() }

// Wait waits for the flood's end and returns what it sent (also with an
// error, when pktgen reported one after sending).
func (r *FloodRun) Wait(ctx context.Context) (FloodResult, error) {
	res, err := r.s.Wait(ctx)
	if res == nil {
		return FloodResult{}, err
	}
	return FloodResult{Packets: res.Packets(), Errors: res.Errors(), PPS: res.PPS(), Stopped: res.Stopped}, err
}
