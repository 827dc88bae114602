// Package results is the results store: the samples of a run, where they
// and the raw outputs behind them live on disk, and how they are read back.
// The runner writes through it (Create, Open, Writer), report and compare
// read through it (Load, Set); it runs no tools, computes no statistics and
// formats no tables.
//
// # The run directory
//
// This is the one description of the layout; ArtifactDir, ConsoleLog,
// FaultConsole, LabVMDir, LabDir, LabConsole, LabScenario and ShardDir
// build its paths and the runner uses nothing else.
//
//	RUN/
//	  results.jsonl              one Sample per line (ResultsFile)
//	  env.json                   Env: where it was measured (EnvFile)
//	  reproduce.sh               the commands run, in order (ReproduceFile)
//	  artifacts/                 (ArtifactsDir)
//	    console-N.log            QEMU console of the run's Nth guest boot, N from 0
//	    CELL/KERNEL/REP/         raw outputs of one sample: pktgen results,
//	                             perf stat/record/report, iperf3 JSON, trafgen
//	                             config and output (ArtifactDir)
//	      warmup/                the warmup's outputs (WarmupDir)
//	    CELL/KERNEL/REP-fault-console.log
//	                             the console of a guest whose kernel faulted
//	                             under TCG in that sample, kept when the
//	                             sample ran again on a fresh guest
//	                             (FaultConsole)
//	    shard-N/...              after merge: a file of the Nth input whose path
//	                             an earlier input already used (ShardDir)
//	  lab/                       lab mode
//	    scenario.yaml            the scenario the lab VMs' runs read (LabScenario)
//	    LABEL/                   kernel LABEL's lab VM (LabVMDir)
//	      console.log            its console (LabConsole)
//	      console-1.log          the first lab VM's console, when its kernel
//	                             failed under TCG and the lab was booted
//	                             again (LabFirstConsole)
//	      run/                   the run made inside it, same layout (LabDir);
//	                             its samples are imported into RUN/results.jsonl
//	                             with artifact paths re-rooted under it
//
// CELL is the cell name with "/" written as "__" and KERNEL the kernel label
// (PathElem of each); REP counts from 0. Sample.Artifacts holds paths
// relative to RUN.
//
// # results.jsonl
//
// One JSON object per line, schema SchemaVersion (readers accept 1 up to
// it; a newer record is bad input asking to upgrade):
//
//	{"schema":1,"run":ID,"cell":NAME,"rep":N,"kernel":LABEL,"axes":{...},
//	 "start":RFC3339,"window_s":F,"metrics":{"tx_pps":F,...},
//	 "threads":[{"i":0,"tx_pps":F,"errors":N,"lost_pps":F}],"labels":{...},
//	 "warnings":[...],"artifacts":["artifacts/CELL/KERNEL/REP/pktgen-tap0.txt"],
//	 "symbols":[{"target":"vhost","symbol":"...","dso":"...","overhead":F,"addresses":N}],
//	 "perf_running":{"perf.cycles@vhost":F},
//	 "emulated":BOOL,"warmup":BOOL,"unsupported":REASON,"void_rerun":CAUSE,
//	 "fault_rerun":LINE}
//
// Writer.Append writes one line and fsyncs it, so a crash loses at most the
// line being written. Create refuses a directory that already holds results;
// Open resumes one (Done tells which cell, kernel and
// repetition are there) and cuts off a torn last line. Load skips a torn
// last line with a warning in Set.Warnings; any other bad line is bad input
// naming file and line. NaN and infinite metrics are dropped on Append with
// a warning in the sample (JSON cannot hold them).
//
// # What a Sample holds
//
//   - Metrics: keys of the Metrics registry (Lookup gives unit and
//     direction; Describe also guesses for units of other tools). tx_pps is
//     the total over generator threads; per-thread numbers go in Threads,
//     and Sample.Value derives tx_pps_thread and lost_pps_thread (the mean
//     over threads) from them, so per-thread and total are never confused.
//   - perf stat counters: "perf.<event>" with the perf target ("vhost",
//     "kpktgend", "vcpu", "qemu", ...) in Labels["target"] when the sample
//     has one target, or "perf.<event>@<target>" when it has several
//     (SplitPerf). Derived "perf.ipc" and "perf.cpus_utilized" are known
//     too.
//   - perf stat's multiplexing: PerfRunning, by perf key, the share of the
//     time a counter ran where below 1 (perf's "(66.85%)" column; perf
//     scaled the count up). Reports show it beside the value.
//   - perf report top symbols: Symbols ({Target, Symbol, DSO, Overhead in
//     percent}), the top of `perf report` per target; the raw report stays
//     an artifact.
//   - Labels that table headers use: "generator" (pktgen|trafgen|iperf3),
//     "guest" (e.g. "Debian 12 VM"), "count" (packets) or "duration",
//     "threads", "pkt_size", "pin" ("vhost:0"; present but empty means
//     unpinned), "qdisc". Axes values are used when a label is missing.
//   - Emulated: true under TCG (also set on load when env.json says tcg).
//   - Nested: true for a lab kernel's sample (its datapath ran inside the
//     lab VM), false for the running kernel's; set on load for samples
//     with a "lab" label. Reports mark such columns "(nested)" and warn
//     when one report mixes nested and bare-metal columns.
//   - Labels "vhost_workers" (in-process | kthread) and "qemu_target"
//     (what perf -p QEMU counted: qemu+vhost on Linux 6.4+, without the
//     vhost kthreads before).
//   - Warmup: a discarded warmup sample; Load skips it.
//   - Unsupported: the kernel or device refused the cell's configuration
//     (a workload's "n/a", with the reason); such a sample has no metrics.
//   - VoidRerun: the sample is its cell's second attempt after a first that
//     measured nothing valid (fault.ErrVoid), with the first's short cause
//     ("connection reset by peer"); reports count these per kernel. An
//     optional field added within schema 1: older readers ignore it, and
//     Load sets it ("cause not recorded") for older samples that carry only
//     the "ran again after a void measurement" warning.
//   - FaultRerun: the sample is its cell's second attempt on a fresh guest
//     after the first attempt's guest kernel faulted under TCG, with that
//     fault line (clipped); its kept console (FaultConsole) is among the
//     artifacts. Reports count these per kernel beside the void re-runs.
//     Optional within schema 1 like VoidRerun; Load sets it ("cause not
//     recorded") for older samples that carry only the FaultRerunNote
//     warning.
//
// A lab kernel whose lab VM was booted again (its first one's kernel
// failed under TCG) says so in env.json: Kernels[LABEL].LabRetry holds the
// first VM's failure ("why") and its kept console ("console",
// LabFirstConsole). Optional too: older readers ignore it.
//
// # Go benchmark format
//
// Load also reads Go benchmark format files (golang.org/x/perf/benchfmt):
// each result line is a sample, "/key=value" name parts are axes (the cell
// is the values joined by "/"), units are metric keys, the "kernel" name
// part or configuration key is the kernel label (else the file name), and
// "accel: tcg" or "emulated: true" marks it emulated. WriteBenchfmt writes a
// Set back in that format, one line per sample, with the metrics'
// directions as Unit metadata, so benchstat reads it
// ("benchstat -col kernel FILE").
//
// Errors about the input are fault.ErrInput.
package results
