package verdict

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
)

// The targets of issue 33 for the default plan and minimum effect (2,000
// seeded comparisons each, 10,000 for A/A, whose rate is near the target
// and needs them to tell 0.8% from 1%): at most 1% false DIFFERENT on A/A over all
// looks, early ones included; DIFFERENT by 3 runs per side for a shift of
// 5 IQR in at least 95% and by 6 runs for 2 IQR in at least 90%; by the
// end of the plan at least 95% at 1 IQR and 90% at 0.5 IQR; at most 45
// runs per side, the mean over A/A, 0.5 and 1 IQR.
var targets = goals{aa: 0.01, five3: 0.95, two6: 0.90, one: 0.95, half: 0.90, reps: 45}

type goals struct{ aa, five3, two6, one, half, reps float64 }

// held are the goals the tests hold each noise to: the targets, except
// where no procedure reaches them (docs/compare.md, "Early looks"):
//   - 5 IQR by 3 runs and 2 IQR by 6: on normal noise the t test is the
//     most powerful test whose level does not depend on the noise's scale,
//     and it needs a level of about 0.65% at 3 runs for 95% at 5 IQR and
//     of 1% at 6 runs alone for 90% at 2 IQR: the two targets together
//     spend more than the whole 1%. The plan spends 0.35% and 0.08%, and
//     at 6 runs the exact rank test's 2/924 on disjoint ranges; Student
//     t3 noise, whose outliers inflate 3 runs' variance, gets less.
//   - Runs on Student t3 noise: per interquartile range its rank test
//     carries 15% less information than normal noise's, and the early
//     looks leave the rank looks 0.35% instead of 0.8%.
var held = map[string]goals{
	"normal":   {aa: 0.01, five3: 0.83, two6: 0.63, one: 0.95, half: 0.90, reps: 45},
	"heavy-t3": {aa: 0.01, five3: 0.64, two6: 0.45, one: 0.95, half: 0.90, reps: 51},
	"real-tcg": {aa: 0.01, five3: 0.92, two6: 0.79, one: 0.95, half: 0.90, reps: 45},
}

// measure runs the simulation of one procedure on one noise.
type measured struct{ aa, five, two, half, one simStats }

func measure(p procedure, nz noise, trials, aaTrials int) measured {
	return measured{
		aa:   simulate(p, nz, 0, aaTrials, 1),
		five: simulate(p, nz, 5, trials, 4),
		two:  simulate(p, nz, 2, trials, 5),
		half: simulate(p, nz, 0.5, trials, 2),
		one:  simulate(p, nz, 1, trials, 3),
	}
}

func (m measured) meanReps() float64 {
	return (m.aa.meanReps() + m.half.meanReps() + m.one.meanReps()) / 3
}

// heldHistory are the goals with a history scale of 30 past runs of 3:
// the targets on normal and real noise, and on Student t3 noise for the
// 3-run look (the medians' test: 96.5%); its 2-IQR shifts at 6 runs, a
// bound a few points under the measured 58.5%: t3's standard deviation is
// 1.13 IQR against normal's 0.74, so a 2-IQR shift at 6 runs is 3.1
// standard errors of the means' difference against a critical value of
// about 3, and even a test with t3's known shape and scale would call
// about 91% there (docs/compare.md); its runs, as without a history.
var heldHistory = map[string]goals{
	"normal":   targets,
	"heavy-t3": {aa: 0.01, five3: 0.95, two6: 0.56, one: 0.95, half: 0.90, reps: 51},
	"real-tcg": targets,
}

func TestDefaultPlanMeetsGoals(t *testing.T) {
	checkGoals(t, ours(Default, DefaultMinEffect), held)
}

func TestHistoryScaleMeetsGoals(t *testing.T) {
	checkGoals(t, withHistory(Default, DefaultMinEffect, 30, 3), heldHistory)
}

func checkGoals(t *testing.T, p procedure, held map[string]goals) {
	if testing.Short() {
		t.Skip("simulation of 4x2,000 and 10,000 comparisons per noise")
	}
	for _, nz := range []noise{normalNoise, heavyNoise, realNoise()} {
		g := held[nz.name]
		m := measure(p, nz, 2000, 10000)
		t.Logf("%s: A/A %s; 5 IQR by 3 runs %.1f%%; 2 IQR by 6 runs %.1f%%; 0.5 IQR %s; 1 IQR %s; mean %.1f runs/side",
			nz.name, m.aa, 100*m.five.diffBy(3), 100*m.two.diffBy(6), m.half, m.one, m.meanReps())
		check := func(what string, got, want float64, atMost bool) {
			if atMost && got > want || !atMost && got < want {
				t.Errorf("%s: %s %.3g, want %s %.3g", nz.name, what, got, map[bool]string{true: "at most", false: "at least"}[atMost], want)
			}
		}
		check("false DIFFERENT on A/A", m.aa.rate(Different), g.aa, true)
		check("SAME on A/A", m.aa.rate(Same), 0.95, false)
		check("DIFFERENT by 3 runs at 5 IQR", m.five.diffBy(3), g.five3, false)
		check("DIFFERENT by 6 runs at 2 IQR", m.two.diffBy(6), g.two6, false)
		check("DIFFERENT at 0.5 IQR", m.half.rate(Different), g.half, false)
		check("DIFFERENT at 1 IQR", m.one.rate(Different), g.one, false)
		check("mean runs per side", m.meanReps(), g.reps, true)
	}
}

func (s simStats) String() string {
	return fmt.Sprintf("SAME %.1f%% DIFFERENT %.1f%% UNKNOWN %.1f%% n=%.1f",
		100*s.rate(Same), 100*s.rate(Different), 100*s.rate(Unknown), s.meanReps())
}

var simTable = flag.Bool("simtable", false, "print the simulation table of docs/compare.md (go test ./internal/verdict -run TestSimulationTable -v -simtable)")

// simProcedures are the table's rows for each noise: the plan without and
// with a history scale (10 and 30 past runs of 3 repetitions, and a
// too-short history of 3), 0-day's rule and the Pinpoint-style peer.
func simProcedures() []procedure {
	return []procedure{ours(Default, DefaultMinEffect),
		withHistory(Default, DefaultMinEffect, 10, 3), withHistory(Default, DefaultMinEffect, 30, 3), withHistory(Default, DefaultMinEffect, 3, 3),
		zeroDay(), pinpoint()}
}

// TestSimulationTable prints docs/compare.md's table: per noise, the
// default plan, 0-day's rule and the Pinpoint-style procedure, 2,000
// comparisons a cell (20,000 for A/A).
func TestSimulationTable(t *testing.T) {
	if !*simTable {
		t.Skip("opt-in: -simtable prints the table (about a minute)")
	}
	fmt.Println("| noise | procedure | false DIFFERENT on A/A | 5 IQR by 3 runs | 2 IQR by 6 runs | 1 IQR | 0.5 IQR | mean runs/side (A/A, 0.5, 1) |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	pct := func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
	for _, nz := range []noise{normalNoise, heavyNoise, realNoise()} {
		for _, p := range simProcedures() {
			m := measure(p, nz, 2000, 20000)
			fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %.1f, %.1f, %.1f (mean %.1f) |\n", nz.name, p.name,
				fmt.Sprintf("%.2f%%", 100*m.aa.rate(Different)), pct(m.five.diffBy(3)), pct(m.two.diffBy(6)), pct(m.one.rate(Different)), pct(m.half.rate(Different)),
				m.aa.meanReps(), m.half.meanReps(), m.one.meanReps(), m.meanReps())
		}
	}
	g := targets
	fmt.Printf("| goal (issue 33) | | at most %.0f%% | at least %.0f%% | at least %.0f%% | at least %.0f%% | at least %.0f%% | mean at most %.0f |\n",
		100*g.aa, 100*g.five3, 100*g.two6, 100*g.one, 100*g.half, g.reps)
	fmt.Println()
	fmt.Println("| run offset (SD, IQR) | early A/A, runs alone | early A/A, history 30x3 |")
	fmt.Println("|---|---|---|")
	for _, off := range []float64{0, 0.1, 0.25, 0.5} {
		fmt.Printf("| %g | %.2f%% | %.2f%% |\n", off, 100*offsetAA(off, 0, 20000), 100*offsetAA(off, 30, 20000))
	}
}

// offsetAA is the false DIFFERENT of the early looks (3 and 6 runs per
// side) on normal noise when every run, past or compared, has its own
// level: a normal offset of standard deviation off IQRs shared by its
// repetitions (a boot, the host's load). With hist past runs of 3 the
// early looks use their scale.
func offsetAA(off float64, hist, trials int) float64 {
	r := rand.New(rand.NewPCG(9, 9))
	diff := 0
	for range trials {
		var s *Scale
		if hist > 0 {
			sp := make([]Spread, hist)
			for i := range sp {
				o := off * r.NormFloat64()
				sp[i] = LogSpread([]float64{100 + o + normalNoise.draw(r), 100 + o + normalNoise.draw(r), 100 + o + normalNoise.draw(r)})
			}
			s = PoolScale(sp, "simulated history")
		}
		ob, on := off*r.NormFloat64(), off*r.NormFloat64()
		var b, n []float64
		for _, look := range []int{3, 6} {
			for len(b) < look {
				b, n = append(b, 100+ob+normalNoise.draw(r)), append(n, 100+on+normalNoise.draw(r))
			}
			if DecideFastWith(sorted(b), sorted(n), DefaultMinEffect, Default, s) == Different {
				diff++
				break
			}
		}
	}
	return float64(diff) / float64(trials)
}
