package history

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// The choice of Default's p. Issue 33 sets goals on two kinds of real
// series, which the detector should meet at its default: F1 at least
// 0.72 and covering at least 0.67 on real-world labelled series (TCPD),
// F1 and covering at least 0.70 on CI performance histories; and at most
// 1 false alert per 1,000 stationary points. The rule: among the p
// levels scored on both corpora's train halves, those whose worst
// synthetic false alert rate (falseAlertRates, every family) is at most
// 1 per 1,000 points, the one whose worst margin against the four goals
// is largest. A goal met does not make up for another missed, so the
// worst margin decides, not their sum.

// goal is one of issue 33's targets on a corpus's train half.
type goal struct {
	corpus, score string
	min           float64
}

var goals = []goal{{"tcpd", "F1", 0.72}, {"tcpd", "covering", 0.67}, {"ci", "F1", 0.70}, {"ci", "covering", 0.70}}

// ciTrainRecorded are the CI histories' train-half scores (F1, covering)
// at the p levels they were scored at, from the recorded evaluation of
// 2026-12-02 (docs/history.md): the 9 series were copied out of Mozilla's
// published data by hand and are not in the repository or on a CI
// machine. They were scored with the correlation cap at 0.6; at 0.5
// they stand, as no series' estimated inflation (at most 1.4) reaches
// either cap's (3 and 4). With VNETBENCH_PERFSERIES set, the test scores
// the series there instead, at every level it prints.
var ciTrainRecorded = map[float64][2]float64{
	0.001: {0.529, 0.672},
	0.005: {0.505, 0.655},
	0.02:  {0.436, 0.467},
}

// levelScore is one p level's standing under the rule.
type levelScore struct {
	alpha       float64
	tcpd, ci    [2]float64 // train halves' F1 and covering
	tcpdHeld    [2]float64 // printed, not used by the rule
	hasCI       bool
	worstFA     float64 // false alerts per 1,000 points, worst family
	worstFamily string
	fas         []falseRate
	synth       [2]float64 // synthetic suite's F1 and covering
	steps       []stepRate
}

// margin is the worst of the four goals' margins (score - goal).
func (l levelScore) margin() float64 {
	m := 1.0
	for i, g := range goals {
		v := l.tcpd[i%2]
		if g.corpus == "ci" {
			v = l.ci[i%2]
		}
		m = min(m, v-g.min)
	}
	return m
}

func (l levelScore) eligible() bool { return l.hasCI && l.worstFA <= 1 }

// TestSensitivityChoice scores p levels around Default's on TCPD (train
// and held-out halves), the CI histories (train half; measured or
// recorded), and the synthetic false alert families, prints the table
// the rule reads and fails when the rule picks another level than
// Default's.
func TestSensitivityChoice(t *testing.T) {
	dir := os.Getenv("VNETBENCH_TCPD")
	if dir == "" {
		t.Skip("VNETBENCH_TCPD is not set: point it at a checkout of the Turing Change Point Dataset to check the choice of the default sensitivity (opt-in)")
	}
	tcpd, err := readTCPD(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ci []labelled
	if pd := os.Getenv("VNETBENCH_PERFSERIES"); pd != "" {
		if ci, err = readPerfSeries(pd); err != nil {
			t.Fatal(err)
		}
	}
	syn := suite(t, 1, 100)
	var ls []levelScore
	for _, a := range []float64{0.0002, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.02} {
		ls = append(ls, scoreLevel(t, a, tcpd, ci, syn))
	}
	best := -1
	for i, l := range ls {
		if l.eligible() && (best < 0 || l.margin() > ls[best].margin()) {
			best = i
		}
	}
	t.Logf("train halves (the rule), TCPD held-out beside; CI %s:\n%s", ciSource(ci), levelTable(ls, best))
	t.Logf("synthetic: false alerts per 1,000 stationary points by family, the suite's F1/covering, 2x steps found:\n%s", synthTable(ls))
	if best < 0 {
		t.Fatal("no level meets the false alert goal and has CI scores")
	}
	if ls[best].alpha != Default.Alpha {
		t.Errorf("the rule picks p %g, Default has %g", ls[best].alpha, Default.Alpha)
	}
}

func ciSource(ci []labelled) string {
	if len(ci) > 0 {
		return "scored on VNETBENCH_PERFSERIES"
	}
	return "as recorded (VNETBENCH_PERFSERIES not set)"
}

// scoreLevel scores Default at p alpha; the CI scores are measured when
// ci holds series, else taken from ciTrainRecorded when it has alpha.
func scoreLevel(t *testing.T, alpha float64, tcpd, ci []labelled, syn []synth) levelScore {
	p := Default
	p.Alpha = alpha
	find := func(s labelled) []int { return indices(p.Detect(s.xs)) }
	l := levelScore{alpha: alpha}
	tr, ho := halves(tcpd)
	r, h := scoreReal(tr, find), scoreReal(ho, find)
	l.tcpd, l.tcpdHeld = [2]float64{r.f1, r.cover}, [2]float64{h.f1, h.cover}
	if len(ci) > 0 {
		tr, _ := halves(ci)
		c := scoreReal(tr, find)
		l.ci, l.hasCI = [2]float64{c.f1, c.cover}, true
	} else {
		l.ci, l.hasCI = ciTrainRecorded[alpha]
	}
	l.fas = falseAlertRates(t, p, 40)
	for _, fa := range l.fas {
		if fa.perK() > l.worstFA || l.worstFamily == "" {
			l.worstFA, l.worstFamily = fa.perK(), fa.name
		}
	}
	l.synth[0], l.synth[1] = synthScore(syn, p)
	l.steps = stepOf2xRates(t, p)
	return l
}

// halves splits series into the train and held-out halves.
func halves(series []labelled) (train, held []labelled) {
	for _, s := range series {
		if heldOut(s.name) {
			held = append(held, s)
		} else {
			train = append(train, s)
		}
	}
	return train, held
}

func levelTable(ls []levelScore, best int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%7s %11s %11s %-16s %7s %11s\n", "p", "TCPD train", "CI train", "worst FA/1000", "margin", "TCPD held")
	for i, l := range ls {
		ci, margin := "-", "-"
		if l.hasCI {
			ci = fmt.Sprintf("%.3f/%.3f", l.ci[0], l.ci[1])
			margin = fmt.Sprintf("%+.3f", l.margin())
		}
		mark := ""
		if i == best {
			mark = " <- the rule's pick"
		}
		fmt.Fprintf(&b, "%7g %.3f/%.3f %11s %5.2f %-10s %7s %.3f/%.3f%s\n", l.alpha, l.tcpd[0], l.tcpd[1], ci, l.worstFA, l.worstFamily, margin, l.tcpdHeld[0], l.tcpdHeld[1], mark)
	}
	return b.String()
}

// synthTable is a row per level: false alerts per family, the synthetic
// suite's scores and the share of 2x steps found per noise.
func synthTable(ls []levelScore) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%7s", "p")
	for _, fa := range ls[0].fas {
		fmt.Fprintf(&b, " %10s", fa.name)
	}
	fmt.Fprintf(&b, " %11s", "F1/cover")
	for _, sr := range ls[0].steps {
		fmt.Fprintf(&b, " %10s", "2x "+sr.name)
	}
	b.WriteString("\n")
	for _, l := range ls {
		fmt.Fprintf(&b, "%7g", l.alpha)
		for _, fa := range l.fas {
			fmt.Fprintf(&b, " %10.2f", fa.perK())
		}
		fmt.Fprintf(&b, " %.3f/%.3f", l.synth[0], l.synth[1])
		for _, sr := range l.steps {
			fmt.Fprintf(&b, " %9.1f%%", 100*sr.rate)
		}
		b.WriteString("\n")
	}
	return b.String()
}
