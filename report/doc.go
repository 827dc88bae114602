// Package report owns the results store (results.jsonl, env.json), turns
// samples into a format-free table model with statistics, and renders it as
// text, markdown, CSV, JSON, Go benchmark format or HTML. It also compares
// two runs and decides CI gates. It never starts processes, never probes
// the host (the runner fills Env) and never parses tool output (perfparse
// does; the runner puts the numbers into Samples).
//
// # Results store
//
// A run directory holds results.jsonl (one Sample per line, schema
// SchemaVersion, appended and fsynced by RunWriter.Append), env.json (Env),
// artifacts/<kernel>/<cell>/<rep>/ (RunWriter.ArtifactDir) and
// reproduce.sh. CreateRun starts a run; OpenRun resumes one (Done and
// Completed tell which cell, kernel and repetition are already there; a
// torn last line is cut off). Load reads run directories and Go benchmark
// format files and joins them by kernel label; a torn last line is skipped
// with a warning in Set.Warnings.
//
// # What the runner puts in a Sample
//
//   - Metrics: keys of the Metrics registry (Lookup gives unit and
//     direction). tx_pps is the total over generator threads; per-thread
//     numbers go in Threads (tx_pps_thread is derived from them when there
//     are several threads, so per-thread and total are never confused).
//   - perf stat counters: "perf.<event>" with the perf target ("vhost",
//     "kpktgend", "vcpu", "qemu", ...) in Labels["target"] when the sample
//     has one target, or "perf.<event>@<target>" when it has several
//     (SplitPerf). Derived "perf.ipc" and "perf.cpus_utilized" are known too.
//   - perf report top symbols: Symbols ({Target, Symbol, DSO, Overhead in
//     percent}), the top of `perf report` per target; the raw report stays
//     an artifact. A symbol absent from one repetition's list counts as 0.
//   - Labels that table headers use: "generator" (pktgen|trafgen|iperf3),
//     "guest" (e.g. "Debian 12 VM"), "count" (packets) or "duration",
//     "threads", "pkt_size", "pin" ("vhost:0"; present but empty means
//     unpinned), "qdisc". Axes values are used when a label is missing.
//   - Emulated: true under TCG; every renderer marks such columns.
//
// # Model and renderers
//
// Build computes Stats (n, mean, median, stddev, CV, min, max, 95% CI of
// the median from golang.org/x/perf/benchmath, harmonic mean for rates via
// montanaflynn/stats) per cell, column and metric, Comparisons against the
// base column (Mann-Whitney U from benchmath; "~" when not significant; a
// warning when the sample sizes can never reach significance), and Tables:
// thread-style tables (rows grouped by backend, one column per kernel
// label, a context header cell), size sweeps, perf stat and perf report
// side by side, benchstat-style comparisons, and one "harness and
// diagnostics" table (KindHarness: the Diagnostics metrics, the harness's
// self-measurements and cross-checks, one row per cell). Caveats are values
// (Stats.Warnings, Delta.TooFew, Table.Notes), not errors.
//
// A benchstat-style cell is "median ± CI%" when the 95% CI of the median
// is finite (n >= 6), else the median and the range of the runs,
// "11.88k (n=2, 8.95..14.8k)"; a table note says which. Tables marked
// Detail (the per-metric tables when there is only one column, and the
// harness table) are left out of text and markdown unless Options.Details
// (--details): the default text is what one mails. JSON, CSV, benchfmt and
// HTML hold everything. Sample warnings that are word for word the same in
// several cells (the TCG warning) are reported once. WriteText,
// WriteMarkdown (olekukonko/tablewriter), WriteCSV, WriteJSON,
// WriteBenchfmt and WriteHTML (one file, inline SVG charts with error bars)
// draw them; Render picks one by name.
//
// # Gates
//
// CompareRuns compares two sets cell by cell and applies Gates parsed from
// --fail-on ("tx_pps<-3%,lost_pps>+0%"): a gate trips only on a
// significant change beyond its threshold. Without --fail-on every shown
// metric with a direction is gated at 0% in its bad direction, except the
// Diagnostics unless named in Metrics. CompareResult.Err returns a
// *GateError (ExitCode 1); bad input is an *InputError (ExitCode 2).
package report
