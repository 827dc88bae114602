// Command gen writes the generated results sets under
// report/testdata/generated: made-up but realistic numbers in the shape of
// the netdev tun/tap thread (report/testdata/README.md). It owns that
// directory and rewrites all of it; it never touches the real captures
// under report/testdata/real. Run from the repository root:
//
//	go run ./report/testdata/gen [-o DIR]
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/scenarios"
)

var rng = rand.New(rand.NewPCG(1, 2))

func noisy(v, cv float64) float64 {
	if v == 0 {
		return 0
	}
	return math.Round(v * (1 + cv*rng.NormFloat64()))
}

var t0 = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

func hostEnv(run string) results.Env {
	return results.Env{
		Run: run, Created: t0, Version: "v0.1.0", Scenario: "thread-pktgen-vhost-pinned", Seed: 1,
		Hostname: "bench1", KernelRelease: "6.19.0-rc3", Cmdline: "BOOT_IMAGE=/boot/vmlinuz-6.19.0-rc3 root=/dev/nvme0n1p2 ro quiet mitigations=auto",
		Mitigations: map[string]string{"spectre_v2": "Mitigation: IBRS; IBPB: conditional; STIBP: conditional; RSB filling", "meltdown": "Mitigation: PTI"},
		CPUModel:    "Intel(R) Core(TM) i5-6300HQ CPU @ 2.30GHz", CPUs: 4, Governor: "performance", SMT: "notsupported",
		QEMUVersion: "QEMU emulator version 9.2.0", PerfVersion: "perf version 6.19.rc3", Accel: "kvm",
	}
}

type pk struct{ tx, lost float64 }

func main() {
	out := flag.String("o", "report/testdata/generated", "directory to write (removed first)")
	flag.Parse()
	if _, err := os.Stat("report/testdata/gen/main.go"); err != nil {
		log.Fatal("run from the repository root: go run ./report/testdata/gen")
	}
	generate(*out)
}

func generate(out string) {
	must(os.RemoveAll(out))
	// Thread-style pktgen runs, one run directory per kernel.
	pktgen := map[string]map[string]pk{
		"stock": {"tap/pktgen-t1": {452e3, 1154e3}, "tap+vhost/pktgen-t1": {960e3, 493e3},
			"tap/pktgen-t4": {488e3, 4210e3}, "tap+vhost/pktgen-t4": {1105e3, 2890e3}},
		"patched": {"tap/pktgen-t1": {571e3, 0}, "tap+vhost/pktgen-t1": {1012e3, 0},
			"tap/pktgen-t4": {590e3, 0}, "tap+vhost/pktgen-t4": {1190e3, 0}},
	}
	cells := []struct {
		name, backend string
		threads       int
	}{{"tap/pktgen-t1", "tap", 1}, {"tap+vhost/pktgen-t1", "tap+vhost", 1}, {"tap/pktgen-t4", "tap", 4}, {"tap+vhost/pktgen-t4", "tap+vhost", 4}}
	for _, k := range []string{"stock", "patched"} {
		w := create(filepath.Join(out, k), hostEnv("thread-"+k))
		patched := k == "patched"
		for rep := 0; rep < 5; rep++ {
			for _, c := range cells {
				v := pktgen[k][c.name]
				tx := noisy(v.tx, 0.008)
				lost := noisy(v.lost, 0.015)
				if patched {
					lost = float64(rng.IntN(3)) // a handful of drops at most
				}
				window := 10e6 / tx
				s := results.Sample{Run: "thread-" + k, Cell: c.name, Rep: rep, Kernel: k,
					Axes:    map[string]string{"backend": c.backend, "generator": fmt.Sprintf("pktgen-t%d", c.threads)},
					Start:   t0.Add(time.Duration(rep*4+len(c.name)) * time.Minute),
					WindowS: math.Round(window*1000) / 1000,
					Metrics: map[metric.Key]float64{"tx_pps": tx, "lost_pps": lost, "rx_pps": noisy(tx*0.999, 0.001),
						"tap_tx_pps": noisy(tx, 0.001), "pktgen_errors": math.Round(lost * window),
						"tx_run_s": math.Round(window*1e6) / 1e6}, // pktgen's clock, Transmitted's and Lost's interval
					Labels: map[string]string{"generator": "pktgen", "count": "10000000", "threads": fmt.Sprint(c.threads),
						"pkt_size": "60", "pin": "vhost:0", "qdisc": "fq_codel", "guest": "Debian 12 VM"},
					Artifacts: []string{fmt.Sprintf("artifacts/%s/%s/%d/pktgen.txt", k, c.name, rep)},
				}
				var sum float64
				for i := 0; i < c.threads; i++ {
					t := tx / float64(c.threads)
					if i < c.threads-1 {
						t = noisy(t, 0.01)
					} else {
						t = tx - sum
					}
					sum += t
					s.Threads = append(s.Threads, results.ThreadSample{I: i, TxPPS: t, Errors: uint64(math.Round(lost * window / float64(c.threads)))})
				}
				if c.threads == 1 {
					addPerf(&s, c.backend, patched)
				}
				must(w.Append(s))
			}
		}
		must(w.Close())
	}

	// iperf3 under TCG, both kernels in one run directory (lab mode).
	env := hostEnv("iperf3-tcg")
	env.Scenario, env.CPUModel, env.CPUs, env.Accel, env.KernelRelease = "iperf3-tap", "AMD EPYC 7B13", 2, "tcg", "6.18.0"
	env.Kernels = map[string]*results.Env{}
	for _, k := range []string{"stock", "patched"} {
		ke := env
		ke.Kernels = nil
		ke.KernelRelease = "6.1.0-47-amd64"
		if k == "patched" {
			ke.KernelRelease = "6.1.0-47-amd64+tun-fc"
		}
		env.Kernels[k] = &ke
	}
	w := create(filepath.Join(out, "iperf3-tcg"), env)
	ip := map[string]map[string][2]float64{
		"stock":   {"tap": {2.41e9, 112}, "tap+vhost": {3.12e9, 64}},
		"patched": {"tap": {2.46e9, 90}, "tap+vhost": {3.18e9, 60}},
	}
	for rep := 0; rep < 5; rep++ {
		for _, k := range []string{"stock", "patched"} {
			for _, b := range []string{"tap", "tap+vhost"} {
				v := ip[k][b]
				must(w.Append(results.Sample{Run: "iperf3-tcg", Cell: b + "/iperf3-p1", Rep: rep, Kernel: k,
					Axes: map[string]string{"backend": b, "generator": "iperf3-p1"}, Start: t0.Add(time.Duration(rep) * time.Minute), WindowS: 10,
					Metrics:  map[metric.Key]float64{"throughput_bps": noisy(v[0], 0.05), "retransmits": noisy(v[1], 0.3)},
					Labels:   map[string]string{"generator": "iperf3", "duration": "10s", "threads": "1", "qdisc": "fq_codel", "guest": "Debian 12 VM"},
					Emulated: true}))
			}
		}
	}
	must(w.Close())

	// Packet size sweep, both kernels in one run directory.
	w = create(filepath.Join(out, "sweep"), hostEnv("sweep"))
	sizes := []int{64, 128, 256, 512, 1024, 1500}
	base := []float64{960e3, 945e3, 910e3, 850e3, 720e3, 610e3}
	gain := []float64{0.054, 0.047, 0.038, 0.024, 0.011, 0.001}
	for rep := 0; rep < 5; rep++ {
		for _, k := range []string{"stock", "patched"} {
			for i, sz := range sizes {
				v := base[i]
				if k == "patched" {
					v *= 1 + gain[i]
				}
				must(w.Append(results.Sample{Run: "sweep", Cell: fmt.Sprintf("tap+vhost/pktgen-t1/%d", sz), Rep: rep, Kernel: k,
					Axes:  map[string]string{"backend": "tap+vhost", "generator": "pktgen-t1", "pkt_size": fmt.Sprint(sz)},
					Start: t0, WindowS: 10, Metrics: map[metric.Key]float64{"tx_pps": noisy(v, 0.006), "lost_pps": 0},
					Labels: map[string]string{"generator": "pktgen", "duration": "10s", "threads": "1", "pkt_size": fmt.Sprint(sz),
						"pin": "vhost:0", "qdisc": "fq_codel", "guest": "Debian 12 VM"}}))
			}
		}
	}
	must(w.Close())

	// Too few repetitions: a big change that can never be significant.
	for _, k := range []string{"few-a", "few-b"} {
		w := create(filepath.Join(out, k), hostEnv(k))
		for rep := 0; rep < 3; rep++ {
			tx := 452e3
			if k == "few-b" {
				tx = 380e3
			}
			must(w.Append(results.Sample{Run: k, Cell: "tap/pktgen-t1", Rep: rep, Kernel: "stock",
				Axes: map[string]string{"backend": "tap", "generator": "pktgen-t1"}, Start: t0, WindowS: 22,
				Metrics: map[metric.Key]float64{"tx_pps": noisy(tx, 0.01), "lost_pps": noisy(1154e3, 0.01)},
				Labels:  map[string]string{"generator": "pktgen", "count": "10000000", "threads": "1"}}))
		}
		must(w.Close())
	}

	// Last, so the sets above keep their random draws.
	queueXmit(out)
}

// rates are one cell's made-up per-second rates: what pktgen sent, what the
// tap carried to the guest and dropped, what the root qdisc dropped.
type rates struct{ tap, tapDrop, qdiscDrop float64 }

// queueXmit writes qdisc-stock and qdisc-patched: pktgen with queue_xmit
// through the tap's root qdisc (fq_codel; pfifo_fast for 2 threads), in the
// shape of a lab run where the stock tap drains slowly and fq_codel drops
// the rest. The numbers are made up as counters before and after each
// window and a pktgen Result; the runner's own functions turn them into the
// sample's metrics and warnings exactly as a run does (runner.NetMetrics and
// runner.AddResult).
func queueXmit(out string) {
	cells := []struct {
		backend string
		threads int
		qdisc   string
	}{{"tap", 1, "fq_codel"}, {"tap+vhost", 1, "fq_codel"}, {"tap", 2, "pfifo_fast"}, {"tap+vhost", 2, "pfifo_fast"},
		{"tap", 4, "fq_codel"}, {"tap+vhost", 4, "fq_codel"}}
	perKernel := map[string]map[string]rates{
		"stock": {"tap/pktgen-t1": {177, 0, 55680}, "tap+vhost/pktgen-t1": {60862, 0, 0},
			"tap/pktgen-t2": {96279, 1965, 0}, "tap+vhost/pktgen-t2": {118001, 0, 0},
			"tap/pktgen-t4": {406, 12, 141135}, "tap+vhost/pktgen-t4": {91386, 3, 78479}},
		"patched": {"tap/pktgen-t1": {56263, 0, 317}, "tap+vhost/pktgen-t1": {62101, 0, 0},
			"tap/pktgen-t2": {99243, 0, 0}, "tap+vhost/pktgen-t2": {121526, 0, 0},
			"tap/pktgen-t4": {151653, 0, 0}, "tap+vhost/pktgen-t4": {171269, 0, 0}},
	}
	const window = 10 * time.Second
	for _, k := range []string{"stock", "patched"} {
		env := hostEnv("qdisc-" + k)
		env.Scenario = "thread-pktgen-queue-xmit"
		w := create(filepath.Join(out, "qdisc-"+k), env)
		for rep := 0; rep < 5; rep++ {
			for i, c := range cells {
				gen := fmt.Sprintf("pktgen-t%d", c.threads)
				name := c.backend + "/" + gen
				r := perKernel[k][name]
				tap, tapDrop, qdrop := noisy(r.tap, 0.01), noisy(r.tapDrop, 0.2), noisy(r.qdiscDrop, 0.01)
				// The counters: running totals before the window, plus
				// the window's packets after it. pktgen counts what the
				// qdisc accepted (fq_codel drops after accepting).
				sec := window.Seconds()
				before := runner.Counters{Tap: hostnet.LinkStats{TxPackets: 1000 + uint64(rep)*7, TxDropped: 20},
					Qdisc: hostnet.QdiscStats{Kind: c.qdisc, Drops: 300}, Guest: runner.GuestStats{RxPackets: 990}}
				after := before
				after.Tap.TxPackets += uint64(tap * sec)
				after.Tap.TxDropped += uint64(tapDrop * sec)
				after.Qdisc.Drops += uint64(qdrop * sec)
				after.Guest.RxPackets += uint64(tap * sec)
				sent := (tap + tapDrop + qdrop) * sec
				res := &workload.Result{Elapsed: window, Metrics: map[metric.Key]float64{"tx_pps": sent / sec, "pktgen_errors": 0}}
				left := sent
				for t := 0; t < c.threads; t++ {
					n := math.Round(sent / float64(c.threads))
					if t == c.threads-1 {
						n = left
					}
					left -= n
					res.Threads = append(res.Threads, workload.Thread{I: t, TxPPS: n / sec})
				}
				s := results.Sample{Run: "qdisc-" + k, Cell: name, Rep: rep, Kernel: k,
					Axes:    map[string]string{"backend": c.backend, "generator": gen},
					Start:   t0.Add(24*time.Hour + time.Duration(rep*len(cells)+i)*time.Minute),
					WindowS: sec, Metrics: map[metric.Key]float64{},
					Labels: map[string]string{"generator": "pktgen", "count": "560000", "threads": fmt.Sprint(c.threads),
						"pkt_size": "60", "pin": "vhost:0", "qdisc": c.qdisc, "guest": "Debian 12 VM"}}
				runner.NetMetrics(&s, before, after, window)
				runner.AddResult(&s, &scenarios.Cell{Generator: scenarios.Generator{Kind: "pktgen"}}, res)
				must(w.Append(s))
			}
		}
		must(w.Close())
	}
}

func addPerf(s *results.Sample, backend string, patched bool) {
	f := 1.0
	if patched {
		f = 1.04
	}
	if backend == "tap+vhost" {
		cs := 182e3
		if patched {
			cs = 95e3
		}
		s.Metrics["perf.context-switches@vhost"] = noisy(cs, 0.02)
		s.Metrics["perf.cycles@vhost"] = noisy(5.1e10*f, 0.01)
		s.Metrics["perf.instructions@vhost"] = noisy(6.2e10*f*f, 0.01)
		s.Metrics["perf.branches@vhost"] = noisy(1.2e10*f, 0.01)
		s.Metrics["perf.branch-misses@vhost"] = noisy(1.1e8/f/f, 0.02)
		s.Metrics["perf.task-clock@vhost"] = noisy(21900, 0.005) / 1000
		s.Symbols = append(s.Symbols, syms("vhost", patched, []string{"handle_rx", "tun_recvmsg", "copy_user_enhanced_fast_string", "ptr_ring_consume", "vhost_get_vq_desc", "__wake_up_common", "translate_desc"},
			[]float64{14.2, 9.8, 8.1, 6.5, 5.2, 4.4, 3.1}, []float64{13.6, 10.3, 8.3, 5.1, 5.3, 1.9, 3.2})...)
	}
	lostSym := "kfree_skb_reason"
	s.Metrics["perf.context-switches@kpktgend"] = noisy(410, 0.05)
	s.Metrics["perf.cycles@kpktgend"] = noisy(5.3e10, 0.005)
	s.Metrics["perf.instructions@kpktgend"] = noisy(7.9e10*f, 0.01)
	s.Metrics["perf.task-clock@kpktgend"] = noisy(22100, 0.003) / 1000
	s.Symbols = append(s.Symbols, syms("kpktgend", patched, []string{"pktgen_xmit", "tun_net_xmit", "ptr_ring_produce", lostSym, "_raw_spin_lock", "netif_tx_stop_queue"},
		[]float64{22.5, 18.1, 9.7, 11.4, 4.2, 0}, []float64{24.9, 20.3, 10.2, 0.3, 4.0, 2.1})...)
}

func syms(target string, patched bool, names []string, stock, pat []float64) []results.Symbol {
	var out []results.Symbol
	for i, n := range names {
		o := stock[i]
		if patched {
			o = pat[i]
		}
		if o == 0 {
			continue
		}
		o = math.Round(noisy(o*100, 0.03)) / 100
		out = append(out, results.Symbol{Target: target, Symbol: n, DSO: "[kernel.kallsyms]", Overhead: o})
	}
	return out
}

func create(dir string, env results.Env) *results.Writer {
	w, err := results.Create(dir, env)
	must(err)
	return w
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
