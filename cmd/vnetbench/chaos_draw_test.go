package main

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Kill times are drawn below killFrac of the bound, and a run that ended
// before its kill lowers the bound to its length, never raises it.
func TestKillDrawBound(t *testing.T) {
	d := &killDraw{rng: rand.New(rand.NewPCG(1, 1)), bound: 300 * time.Second}
	check := func(limit time.Duration) {
		t.Helper()
		for range 1000 {
			if k := d.next(); k < 0 || k >= limit {
				t.Fatalf("kill at %v, want in [0, %v)", k, limit)
			}
		}
	}
	check(270 * time.Second)
	d.ended(100 * time.Second)
	check(90 * time.Second)
	d.ended(200 * time.Second)
	d.ended(0)
	check(90 * time.Second)
}

// A drawn point whose run ended before the kill (the 20-point attempt of
// 2026-12-02: a reference run of 4m44s with cold builds, killed runs of
// about 4 min) is drawn once more under the run's length, and is taken
// then; one whose every try ends first is not taken and does not pass. An
// event point is tried once.
func TestTakePoint(t *testing.T) {
	const ref, run = 284 * time.Second, 240 * time.Second
	redrawn := 0
	for seed := range uint64(50) {
		d := &killDraw{rng: rand.New(rand.NewPCG(seed, 1)), bound: ref}
		var kills []time.Duration
		p := takePoint(d, chaosKill{}, func(k chaosKill) chaosPoint {
			kills = append(kills, k.after)
			if k.after >= run {
				return chaosPoint{Phase: "after the end", RunS: run.Seconds(), Clean: true, Untouch: true, Resumed: true, Samples: true}
			}
			return chaosPoint{Taken: true, Clean: true, Untouch: true, Resumed: true, Samples: true}
		})
		if !p.Taken || p.Tries != len(kills) || len(kills) > pointTries {
			t.Fatalf("seed %d: kills %v: %+v, want taken within %d tries", seed, kills, p, pointTries)
		}
		if len(kills) == 2 {
			redrawn++
			if kills[1] >= time.Duration(killFrac*float64(run)) {
				t.Errorf("seed %d: redrawn at %v, want below %v of the run's %v", seed, kills[1], killFrac, run)
			}
		}
	}
	if redrawn == 0 {
		t.Errorf("no seed of 50 drew past the run's end: the redraw was not tested")
	}

	tries := 0
	always := func(k chaosKill) chaosPoint {
		tries++
		return chaosPoint{Phase: "after the end", RunS: 1e-3, Clean: true, Untouch: true, Resumed: true, Samples: true}
	}
	d := &killDraw{rng: rand.New(rand.NewPCG(1, 1)), bound: ref}
	p := takePoint(d, chaosKill{}, always)
	if p.Taken || p.passed() || tries != pointTries {
		t.Errorf("a run that always ends first: %+v after %d tries, want not taken, not passed, %d tries", p, tries, pointTries)
	}
	tries = 0
	d = &killDraw{rng: rand.New(rand.NewPCG(1, 1)), bound: ref}
	p = takePoint(d, chaosKill{event: "its first sample written"}, always)
	if p.Taken || tries != 1 || d.bound != ref {
		t.Errorf("an event point: %+v after %d tries, bound %v; want one try, not taken, the bound kept", p, tries, d.bound)
	}
}

// The figure counts a point not taken neither as taken nor as passed,
// whatever its checks say (the attempt of 2026-12-02 counted such a
// point, "after the end", as a pass).
func TestChaosTally(t *testing.T) {
	ok := chaosPoint{Taken: true, Clean: true, Untouch: true, Resumed: true, Samples: true}
	notTaken := ok
	notTaken.Taken, notTaken.Phase = false, "after the end"
	failed := ok
	failed.Resumed, failed.Samples = false, false
	taken, passed := chaosTally([]chaosPoint{notTaken, ok, failed, ok})
	if taken != 3 || passed != 2 {
		t.Errorf("taken %d, passed %d; want 3 and 2", taken, passed)
	}
}
