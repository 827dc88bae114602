package session

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/runner"
)

// progress shows a bar with ETA on a terminal, plain lines otherwise.
// The ETA comes from the estimate from the start, scaled by how the
// samples measured so far compared with their estimate.
type progress struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	total int
	start time.Time
	// started is set by the first Started report. A run of lab and
	// running kernels reports twice (the labs' run, then the host's),
	// each counting from 0: base is the samples reported before the
	// second, seen all reported so far.
	started    bool
	base, seen int
	// measured counts samples run in this invocation (not skipped ones);
	// estDone is their estimated time.
	measured int
	estDone  time.Duration
	// est is the run's estimate, its PerSample in progress order (nil =
	// the ETA waits for a measured sample).
	est *estimate.Estimate
	now func() time.Time
}

func newProgress(w io.Writer, total int, bar bool) *progress {
	p := &progress{w: w, total: total, start: time.Now(), now: time.Now}
	if f, ok := w.(*os.File); ok && bar && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("samples"),
			progressbar.OptionShowCount(), progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionClearOnFinish())
	}
	return p
}

// eta is the time left after done samples ("" when unknown or done).
func (p *progress) eta(done int) string {
	if done >= p.total {
		return ""
	}
	if p.est != nil && len(p.est.PerSample) == p.total {
		left := estimate.ETA(p.est.Left(done), p.estDone, p.now().Sub(p.start))
		if p.measured == 0 {
			return "eta " + estimate.Duration(left) + " (estimate)"
		}
		return "eta " + estimate.Duration(left)
	}
	if p.measured == 0 {
		return ""
	}
	left := time.Duration(float64(p.now().Sub(p.start)) / float64(p.measured) * float64(p.total-done))
	return "eta " + estimate.Duration(left)
}

func (p *progress) update(u runner.Progress) {
	if u.Started {
		if p.started {
			p.base = p.seen
			return
		}
		p.started = true
		p.start = p.now() // the lock is held: work starts now
		if p.bar != nil {
			p.bar.Reset()
			p.bar.Describe("samples, " + p.eta(0))
			return
		}
		if eta := p.eta(0); eta != "" {
			fmt.Fprintf(p.w, "[0/%d] started, %s\n", p.total, eta)
		}
		return
	}
	p.seen++
	done := p.base + u.Done
	if !u.Skipped {
		p.measured++
		if p.est != nil && done >= 1 && done <= len(p.est.PerSample) {
			p.estDone += p.est.PerSample[done-1]
		}
	}
	eta := p.eta(done)
	if p.bar != nil {
		p.bar.Describe(strings.TrimSpace(u.Cell + " " + eta))
		p.bar.Set(done)
		return
	}
	what := "done"
	switch {
	case u.Skipped:
		what = "already in the run, skipped"
	case u.Failed != nil:
		what = "FAILED (recorded as failed; the run goes on)"
	}
	extra := ""
	if s := u.Sample; s != nil {
		extra = " " + sampleSummary(s)
	}
	if eta != "" {
		eta = " " + eta
	}
	fmt.Fprintf(p.w, "[%d/%d] %s rep %d (%s): %s%s%s\n", done, p.total, u.Cell, u.Rep+1, u.Kernel, what, extra, eta)
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

// logWriter prints runner log lines (above the bar on a terminal).
func (p *progress) logWriter() io.Writer {
	return writerFunc(func(b []byte) (int, error) {
		if p.bar != nil {
			p.bar.Clear()
		}
		return p.w.Write(b)
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// sampleSummary is a sample's headline metrics for a progress line, in
// the tables' SI form ("lost_pps=76.95k", not 7.695e+04).
func sampleSummary(s *results.Sample) string {
	var parts []string
	for _, k := range []metric.Key{metric.TxPPS, metric.RxPPS, metric.ThroughputBPS, metric.LostPPS} {
		if v, ok := s.Metrics[k]; ok {
			parts = append(parts, fmt.Sprintf("%s=%s", k, units.SI(v)))
		}
	}
	return strings.Join(parts, " ")
}
