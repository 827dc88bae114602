package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/perfparse"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// Counters is one snapshot of the counters a window is measured with: the
// tap's, its root qdisc's (Kind "" = none) and the guest's eth0.
type Counters struct {
	Tap   hostnet.LinkStats
	Qdisc hostnet.QdiscStats
	Guest GuestStats
	// Drops are the kernel's drops by reason (Window.DropCounts), for a
	// cell with drop_reasons; nil otherwise.
	Drops map[string]uint64
}

// snapshot reads the counters of nic: its tap's, its root qdisc's and the
// guest's for that NIC.
func (r *runState) snapshot(ctx context.Context, g *guest, nic *guestNIC) (Counters, error) {
	var c Counters
	var err error
	if c.Tap, err = r.ns.LinkStats(nic.tap); err != nil {
		return c, err
	}
	c.Qdisc, _ = r.ns.RootQdisc(nic.tap)
	gs, err := g.agent.Stats(ctx)
	if err != nil {
		return c, fmt.Errorf("guest stats: %w", err)
	}
	c.Guest = gs.Of(nic.mac)
	return c, nil
}

func cpuTime(ru unix.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// CellDeadline bounds the time one sample of c may take: timeouts.cell,
// or else its boot, setup, traffic and teardown deadlines (their defaults
// where unset) added; plus a second setup for the window's closing
// counters and the warmup.
func CellDeadline(c *scenarios.Cell) time.Duration {
	t := c.Timeouts
	cell := t.Cell
	if cell <= 0 {
		cell = orDefault(t.Boot, 3*time.Minute) + orDefault(t.Setup, time.Minute) + orDefault(t.Traffic, 10*time.Minute) + orDefault(t.Teardown, 30*time.Second)
	}
	return cell + orDefault(t.Setup, time.Minute) + c.Warmup
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// unsupportedSample records that this kernel or device cannot run c's
// configuration (a workload's UnsupportedError): a sample without
// metrics, with the reason, that tables show as "n/a" with the reason as
// a numbered note. The run goes on with the next cell.
func (r *runState) unsupportedSample(c *scenarios.Cell, reason string) (*results.Sample, error) {
	s := &results.Sample{Run: r.id, Cell: c.Name, Rep: c.Rep, Kernel: kernelLabel(c), Axes: c.Axes, Start: time.Now().UTC(),
		Metrics: map[metric.Key]float64{}, Labels: map[string]string{"generator": c.Generator.Kind},
		Emulated: r.guests.accel(c) != qemu.KVM, Unsupported: reason}
	s.Labels["accel"] = string(r.guests.accel(c))
	if c.Qdisc != "" {
		s.Labels["qdisc"] = c.Qdisc
	}
	r.logf("cell %s rep %d: n/a: %s", c.Name, c.Rep+1, reason)
	if err := r.w.Append(*s); err != nil {
		return nil, err
	}
	return s, nil
}

// runGenerator runs a generator to its end and discards the result.
func (r *runState) runGenerator(ctx context.Context, c *scenarios.Cell, w *Window, timeout time.Duration) error {
	gen, err := r.opts.NewGenerator(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := gen.Start(ctx, w); err != nil {
		return err
	}
	_, err = gen.Wait(ctx)
	return err
}

// AddResult adds what c's workload measured in its window to s: its
// metrics (cross-checked against the tap's count when the workload counts
// packets and s has the tap's), its threads, artifacts and warnings, and
// the generator's busy share (with a warning below 90%).
func AddResult(s *results.Sample, c *scenarios.Cell, res *workload.Result) {
	workloadMetrics(s, c, res)
	s.Artifacts = append(s.Artifacts, res.Artifacts...)
	s.Warnings = append(s.Warnings, res.Warnings...)
	if res.BusyFrac > 0 {
		s.Metrics[metric.GeneratorBusyFrac] = res.BusyFrac
		if res.BusyFrac < 0.9 {
			s.Warnings = append(s.Warnings, fmt.Sprintf("generator %s was %.0f%% busy (< 90%%): it may be waiting rather than saturating the datapath", c.Generator.Kind, res.BusyFrac*100))
		}
	}
}

// CPUPerPacket adds cpu_per_pkt.<target> for every perf stat target
// with a task-clock in s: the target's CPU time in the window over the
// packets the generator transmitted (its count, res.Packets, else tx_pps
// x its run time, res.Elapsed), in ns per packet, total over the target's
// threads. Nothing without a count or tx_pps and a run time.
func CPUPerPacket(s *results.Sample, res *workload.Result) {
	packets := float64(res.Packets)
	if packets == 0 {
		packets = s.Metrics[metric.TxPPS] * res.Elapsed.Seconds()
	}
	if packets < 1 {
		return
	}
	for k, v := range s.Metrics {
		ev, target, ok := results.SplitPerf(k)
		if !ok || ev != "task-clock" {
			continue
		}
		if target == "" {
			target = s.Labels["target"]
		}
		if target != "" {
			s.Metrics[metric.CPUPerPkt(target)] = v * 1e9 / packets
		}
	}
}

// NetMetrics puts into s.Metrics (not nil) the tap's, the root qdisc's and
// the guest's counters over the window. A counter that went back (a
// device made anew in the window) measured nothing: its metrics are left
// out and s gets a warning that says which. Pure, like AddResult: with it
// report/testdata/gen computes its fixtures' metrics as a run does.
func NetMetrics(s *results.Sample, before, after Counters, window time.Duration) {
	sec := window.Seconds()
	m := s.Metrics
	if d, ok := grown(s, "the tap's tx_packets", before.Tap.TxPackets, after.Tap.TxPackets); ok {
		m[metric.TxPackets] = d
		m[metric.TapTxPPS] = d / sec
	}
	if d, ok := grown(s, "the tap's tx_dropped", before.Tap.TxDropped, after.Tap.TxDropped); ok {
		m[metric.LostPPS] = d / sec
	}
	// The xdp-drop sink counts what reaches its program (testpmd
	// rxonly's role in a VM): that is what the guest received.
	rx, a, b := "the guest's rx_packets", before.Guest.RxPackets, after.Guest.RxPackets
	if after.Guest.Sink == vmimages.SinkXDPDrop && before.Guest.Sink == vmimages.SinkXDPDrop {
		rx, a, b = "the guest's XDP drop count", before.Guest.XDPDrops, after.Guest.XDPDrops
	}
	if d, ok := grown(s, rx, a, b); ok {
		m[metric.RxPPS] = d / sec
	}
	// Drops inside the root qdisc (pktgen queue_xmit through fq_codel,
	// say) never reach the tap: lost_pps does not count them.
	if q := after.Qdisc; q.Kind != "" && q.Kind == before.Qdisc.Kind {
		if d, ok := grown(s, "the root qdisc's drops", before.Qdisc.Drops, q.Drops); ok {
			m[metric.QdiscDrops] = d
			m[metric.QdiscDropPPS] = d / sec
		}
	}
}

// grown is counter name's growth b-a; for a counter that went back it
// warns on s and reports false.
func grown(s *results.Sample, name string, a, b uint64) (float64, bool) {
	if b < a {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s went back from %d to %d in the window (a device made anew?): what it counts was not measured", name, a, b))
		return 0, false
	}
	return float64(b - a), true
}

// droppedText says what the tap and its root qdisc dropped, for the tap
// cross-check's warning: "dropped 12 pps at the tap, 3 pps in the qdisc";
// a tap count left out (its counter went back) is not a 0.
func droppedText(m map[metric.Key]float64) string {
	dropped := "the tap's drops not measured"
	if lost, ok := m[metric.LostPPS]; ok {
		dropped = fmt.Sprintf("dropped %.0f pps", lost)
	}
	if qd := m[metric.QdiscDropPPS]; qd > 0 {
		dropped += fmt.Sprintf(" at the tap, %.0f pps in the qdisc", qd)
	}
	return dropped
}

// workloadMetrics adds the workload's metrics and threads.
func workloadMetrics(s *results.Sample, c *scenarios.Cell, res *workload.Result) {
	m := s.Metrics
	for k, v := range res.Metrics {
		m[k] = v
	}
	// A generator that counts its own packets is checked against the tap:
	// what the tap passed on, or for a generator whose count includes
	// the tap's drops (Result.CountsDrops) what it was offered. With a
	// packet count (Result.Packets) the counts are compared: its rate may
	// have another interval than the window (pktgen's own clock).
	if tap, ok := m[metric.TxPackets]; ok && res.Packets > 0 && !res.CountsDrops {
		if r := tap / float64(res.Packets); tap > 0 && (r < 0.8 || r > 1.2) {
			dropped := droppedText(m)
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s sent %d packets but the tap's tx_packets grew by %.0f (%s)",
				c.Generator.Kind, res.Packets, tap, dropped))
		}
	} else if tx, ok := m[metric.TxPPS]; ok {
		// Absent where a counter went back (NetMetrics): no tap count
		// to compare, not a 0.
		tap, measured := m[metric.TapTxPPS]
		if res.CountsDrops {
			lost, ok := m[metric.LostPPS]
			tap, measured = tap+lost, measured && ok
		}
		if measured && tx > 0 && tap > 0 && (tap/tx < 0.8 || tap/tx > 1.2) {
			dropped := droppedText(m)
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s reports %.0f pps but the tap's tx_packets grew at %.0f pps (%s)",
				c.Generator.Kind, tx, tap, dropped))
		}
	}
	for _, t := range res.Threads {
		s.Threads = append(s.Threads, results.ThreadSample{I: t.I, TxPPS: t.TxPPS, Errors: t.Errors, LostPPS: t.LostPPS})
	}
}

// ---- perf ----

type perfTarget struct {
	tids  []int
	whole bool
}

type perfRun struct {
	target string
	record bool
	file   string // -o
	p      proc.Process
	err    error
}

// targetsOf returns the perf targets a cell asks for that exist, in the
// order asked. generatorPhase selects the targets that only exist once the
// generator runs.
func wantTargets(list []string, generatorPhase bool) []string {
	var out []string
	for _, t := range list {
		// The generator's own threads (under the name "generator" or the
		// workload's target name) exist only once it runs.
		gen := t != scenarios.TargetVhost && t != scenarios.TargetVCPU && t != scenarios.TargetQEMU
		if gen == generatorPhase {
			out = append(out, t)
		}
	}
	return out
}

func (r *runState) startPerf(ctx context.Context, c *scenarios.Cell, targets map[string]perfTarget, dir string, generatorPhase bool) ([]*perfRun, error) {
	var runs []*perfRun
	start := func(target string, record bool, argv []string, file string) error {
		p, err := r.exec.Start(ctx, proc.Cmd{Argv: argv})
		if err != nil {
			return err
		}
		runs = append(runs, &perfRun{target: target, record: record, file: file, p: p})
		return nil
	}
	if st := c.Perf.Stat; st != nil {
		for _, t := range wantTargets(st.Targets, generatorPhase) {
			pt := targets[t]
			if len(pt.tids) == 0 {
				continue
			}
			f := filepath.Join(dir, "perf-stat-"+t+".csv")
			if err := start(t, false, PerfStatArgs(st.Events, pt.tids, pt.whole, f), f); err != nil {
				return runs, err
			}
		}
	}
	if rec := c.Perf.Record; rec != nil {
		for _, t := range wantTargets(rec.Targets, generatorPhase) {
			pt := targets[t]
			if len(pt.tids) == 0 {
				continue
			}
			f := filepath.Join(dir, "perf-"+t+".data")
			if err := start(t, true, PerfRecordArgs(*rec, pt.tids, pt.whole, f), f); err != nil {
				return runs, err
			}
		}
	}
	// The window opens only once every perf has its counters open (and
	// its SIGINT handler installed): perf_event file descriptors appear.
	for _, pr := range runs {
		if err := waitPerfReady(ctx, pr.p, 10*time.Second); err != nil {
			_, stderr := pr.p.Output()
			return runs, fmt.Errorf("perf for %s: %v %s", pr.target, err, strings.TrimSpace(stderr))
		}
	}
	return runs, nil
}

// waitPerfReady waits until perf has opened a perf_event file descriptor.
func waitPerfReady(ctx context.Context, p proc.Process, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	dir := "/proc/" + strconv.Itoa(p.Pid()) + "/fd"
	for {
		if ents, err := os.ReadDir(dir); err == nil {
			for _, e := range ents {
				if l, _ := os.Readlink(filepath.Join(dir, e.Name())); l == "anon_inode:[perf_event]" {
					return nil
				}
			}
		}
		select {
		case <-p.Done():
			if ctx.Err() != nil {
				return ctx.Err() // the interrupt killed it
			}
			return fmt.Errorf("exited at start: %v", p.Wait())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no counters open after %v", timeout)
		}
	}
}

// stopPerfs kills perf processes still running (error paths).
func stopPerfs(runs []*perfRun) {
	for _, pr := range runs {
		pr.p.Stop(syscall.SIGKILL, time.Second)
	}
}

// finishPerfs stops every perf with SIGINT (perf then writes its output)
// and waits for them.
func finishPerfs(runs []*perfRun) ([]*perfRun, error) {
	for _, pr := range runs {
		pr.p.Signal(syscall.SIGINT)
	}
	var errs []error
	for _, pr := range runs {
		err := pr.p.Stop(syscall.SIGINT, 10*time.Second)
		if err != nil && !proc.IsSignal(err, "interrupt") && proc.ExitCodeOf(err) != 0 {
			// perf stat exits 0 or with SIGINT's status; anything else
			// is an error, the file may still be useful.
			if _, serr := os.Stat(pr.file); serr != nil {
				pr.err = err
				errs = append(errs, fmt.Errorf("%s: %w", pr.target, err))
			}
		}
	}
	return runs, errors.Join(errs...)
}

// writeBeside writes path, a file of a sample's artifact directory,
// through safefs.
func writeBeside(path string, data []byte) error {
	d, err := safefs.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteFile(filepath.Base(path), data, 0o644)
}

// addPerf parses perf outputs into the sample: perf.<event> (one target)
// or perf.<event>@<target> (several), and the top symbols of records.
// perf report runs under ctx (a SIGINT ends it) within perfReportTimeout;
// a report that fails or cannot be written is a warning, not an artifact.
func (r *runState) addPerf(ctx context.Context, s *results.Sample, c *scenarios.Cell, runs []*perfRun) {
	nstat := 0
	for _, pr := range runs {
		if !pr.record && pr.err == nil {
			nstat++
		}
	}
	for _, pr := range runs {
		if pr.err != nil {
			continue
		}
		relFile, _ := filepath.Rel(r.dir, pr.file)
		if !pr.record {
			b, err := safefs.ReadFile(pr.file, safefs.MaxToolOutput)
			if err != nil {
				s.Warnings = append(s.Warnings, fmt.Sprintf("perf stat %s: %v", pr.target, err))
				continue
			}
			st, err := perfparse.ParsePerfStat(bytes.NewReader(b))
			if err != nil {
				s.Warnings = append(s.Warnings, fmt.Sprintf("perf stat %s: %v", pr.target, err))
				continue
			}
			s.Artifacts = append(s.Artifacts, relFile)
			unsupported, notCounted := addPerfStat(s, st, pr.target, nstat > 1)
			if nstat == 1 {
				s.Labels["target"] = pr.target
			}
			if len(unsupported) > 0 {
				s.Labels["perf_unsupported"] = strings.Join(unsupported, ",")
			}
			if len(notCounted) > 0 {
				s.Warnings = append(s.Warnings, fmt.Sprintf("perf stat %s: %s <not counted>: no thread of the target ran during the window", pr.target, strings.Join(slices.Compact(notCounted), ",")))
			}
			if w := scaledWarning(s, pr.target, nstat > 1); w != "" {
				s.Warnings = append(s.Warnings, w)
			}
			continue
		}
		// perf record: report to text, keep the top symbols.
		txt := strings.TrimSuffix(pr.file, ".data") + "-report.txt"
		rctx, cancel := context.WithTimeout(ctx, perfReportTimeout)
		r.moduleSymbols(rctx)
		out, err := r.exec.Run(rctx, proc.Cmd{Argv: PerfReportArgs(pr.file, c.Perf.Record != nil && c.Perf.Record.CallGraph)})
		cancel()
		if err != nil {
			s.Warnings = append(s.Warnings, fmt.Sprintf("perf report %s: %v", pr.target, err))
			continue
		}
		if err := writeBeside(txt, out); err != nil {
			s.Warnings = append(s.Warnings, fmt.Sprintf("perf report %s: %v", pr.target, err))
			s.Artifacts = append(s.Artifacts, relFile)
			continue
		}
		rt, _ := filepath.Rel(r.dir, txt)
		s.Artifacts = append(s.Artifacts, relFile, rt)
		top := 40
		if c.Perf.Record != nil && c.Perf.Record.Top > 0 {
			top = c.Perf.Record.Top
		}
		s.Symbols = append(s.Symbols, perfSymbols(out, pr.target, top)...)
	}
}

// perfReportTimeout bounds one perf report (a large record on a slow
// machine takes tens of seconds).
const perfReportTimeout = 5 * time.Minute

// addPerfStat adds perf stat's counted rows to s as perf.<event> (or
// perf.<event>@target when qualify: several targets), summing rows of one
// event (threads), with the share of the time each counter ran where it
// was multiplexed (Sample.PerfRunning, the least over the rows). It
// returns the events perf did not support and those it did not count.
//
// On a hybrid CPU perf opens an event once per core type and prints
// cpu_core/cycles/ and cpu_atom/cycles/, each scaled to the whole time
// from the share of it the thread ran on that core type. Such rows are
// merged into the event (perf.cycles): the sum of their unscaled counts
// (value x share), which is the thread's count on both core types, scaled
// only by what is left (multiplexing: the shares sum to less than 1).
// <not counted> on one core type (a thread that never ran there) is then
// normal; only an event no core type counted is reported. The label
// perf_hybrid names the merged PMUs.
func addPerfStat(s *results.Sample, st *perfparse.PerfStat, target string, qualify bool) (unsupported, notCounted []string) {
	// Events that two or more hybrid PMUs carry are merged; one that no
	// PMU supports is reported once, by its plain name.
	pmus, supported := hybridPMUs(st.Rows)
	h := &hybridMerge{byBase: map[string]*hybridEvent{}}
	for _, row := range st.Rows {
		if row.MetricGroup {
			continue // perf 6.5's metric group line: metrics, no count
		}
		pmu, base, hybrid := results.HybridEvent(row.Event)
		hybrid = hybrid && len(pmus[base]) > 1
		if !row.Supported {
			switch {
			case !hybrid:
				unsupported = append(unsupported, row.Event)
			case !supported[base] && !slices.Contains(unsupported, base):
				unsupported = append(unsupported, base)
			}
			continue
		}
		if hybrid {
			h.add(pmu, base, row)
			continue
		}
		if !row.Counted {
			notCounted = append(notCounted, row.Event)
			continue
		}
		key := perfKey(row.Event, target, qualify)
		s.Metrics[key] += row.Value
		notePerfRunning(s, key, row.Multiplex)
	}
	notCounted = append(notCounted, h.addTo(s, target, qualify)...)
	return unsupported, notCounted
}

// perfKey is the metric key of perf event ev: perf.<event>, or
// perf.<event>@target when qualify.
func perfKey(ev, target string, qualify bool) metric.Key {
	if !qualify {
		target = ""
	}
	return results.PerfKey(ev, target)
}

// notePerfRunning records f, the share of the time the counter of key ran,
// in s.PerfRunning when it was multiplexed (0 < f < 1) and is the least
// so far.
func notePerfRunning(s *results.Sample, key metric.Key, f float64) {
	if f <= 0 || f >= 1 {
		return
	}
	if s.PerfRunning == nil {
		s.PerfRunning = map[metric.Key]float64{}
	}
	if old, ok := s.PerfRunning[key]; !ok || f < old {
		s.PerfRunning[key] = f
	}
}

// hybridPMUs returns the hybrid PMUs of each event (by its plain name) in
// rows, and whether any of them supports it.
func hybridPMUs(rows []perfparse.PerfStatRow) (pmus map[string]map[string]bool, supported map[string]bool) {
	pmus = map[string]map[string]bool{}
	supported = map[string]bool{}
	for _, row := range rows {
		if pmu, base, ok := results.HybridEvent(row.Event); ok {
			if pmus[base] == nil {
				pmus[base] = map[string]bool{}
			}
			pmus[base][pmu] = true
			supported[base] = supported[base] || row.Supported
		}
	}
	return pmus, supported
}

// hybridMerge collects the supported rows of hybrid events to merge.
type hybridMerge struct {
	events []*hybridEvent // in input order
	byBase map[string]*hybridEvent
	pmus   []string // the PMUs merged
}

// hybridEvent is one event merged over the PMUs, by thread.
type hybridEvent struct {
	base    string
	threads map[string]*hybridPart // by perf's thread label ("" = all)
	order   []string
}

// hybridPart is a thread's unscaled count of an event over the PMUs and
// the sum of the shares of the time it was counted.
type hybridPart struct{ raw, share float64 }

// add adds a supported row of event base on PMU pmu.
func (h *hybridMerge) add(pmu, base string, row perfparse.PerfStatRow) {
	g := h.byBase[base]
	if g == nil {
		g = &hybridEvent{base: base, threads: map[string]*hybridPart{}}
		h.byBase[base] = g
		h.events = append(h.events, g)
	}
	if !slices.Contains(h.pmus, pmu) {
		h.pmus = append(h.pmus, pmu)
	}
	if !row.Counted {
		return
	}
	p := g.threads[row.Thread]
	if p == nil {
		p = &hybridPart{}
		g.threads[row.Thread] = p
		g.order = append(g.order, row.Thread)
	}
	share := row.Multiplex
	if share <= 0 || share > 1 {
		share = 1
	}
	p.raw += row.Value * share
	p.share += share
}

// addTo adds the merged events to s and labels the merged PMUs
// (perf_hybrid). It returns the events no PMU counted.
func (h *hybridMerge) addTo(s *results.Sample, target string, qualify bool) (notCounted []string) {
	for _, g := range h.events {
		if len(g.order) == 0 {
			notCounted = append(notCounted, g.base)
			continue
		}
		key := perfKey(g.base, target, qualify)
		for _, th := range g.order {
			p := g.threads[th]
			v := p.raw
			// Percentages are printed to 0.01: a sum within that of 1
			// ran all the time.
			if p.share < 0.995 {
				v /= p.share
				notePerfRunning(s, key, p.share)
			}
			s.Metrics[key] += v
		}
	}
	if len(h.pmus) > 0 {
		slices.Sort(h.pmus)
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels["perf_hybrid"] = strings.Join(h.pmus, "+")
	}
	return notCounted
}

// scaledWarning names the target's counters that perf scaled up because
// they were multiplexed (Sample.PerfRunning): estimates, not counts.
func scaledWarning(s *results.Sample, target string, qualified bool) string {
	var evs []string
	least := 1.0
	for k, f := range s.PerfRunning {
		ev, tg, ok := results.SplitPerf(k)
		if !ok || (qualified && tg != target) || (!qualified && tg != "") {
			continue
		}
		evs = append(evs, ev)
		least = min(least, f)
	}
	if len(evs) == 0 {
		return ""
	}
	slices.Sort(evs)
	return fmt.Sprintf("perf stat %s: %s counted only part of the time (down to %.0f%%: multiplexed on the PMU); perf scaled the counts up, they are estimates; count fewer events per run for exact numbers", target, strings.Join(evs, ","), 100*least)
}

// addContextLabels records what a table's context says and the cell's
// axes do not: the generator's length (count or duration: not axes) and
// the guest ("VM (6.1.0-41-cloud-amd64)").
func addContextLabels(s *results.Sample, c *scenarios.Cell, guestKernel string) {
	for _, p := range c.Params() {
		k, ok := strings.CutPrefix(p.Key, "generator."+c.Generator.Kind+".")
		if ok && (k == "count" || k == "duration") && p.Value != "" && p.Value != "0" && p.Value != "0s" {
			s.Labels[k] = p.Value
		}
	}
	if guestKernel != "" {
		s.Labels["guest"] = "VM (" + guestKernel + ")"
	}
}
