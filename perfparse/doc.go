// Package perfparse reads the outputs the harness depends on into typed
// records in base units: packets/s, bit/s, seconds, exact integer counts,
// and fractions (named *_frac in JSON) instead of percentages. Records keep
// the original event, metric and field names and units next to the
// converted values.
//
// It is pure: an io.Reader (or fs.FS) in, records out. It does not run
// programs, compute statistics or format tables.
//
// Inputs and entry points:
//
//   - perf stat: ParsePerfStat detects the default text (perf 4.x–6.x,
//     --per-thread/-t, -A, --per-core, -I, -r variance, multiplexing,
//     --metric-only's columns (refused when whitespace was collapsed),
//     <not supported>/<not counted>, "#" metrics, the elapsed/user/sys
//     footer), -x SEP (any separator string perf was given, detected as
//     the one that reads the most lines as counters; also perf 2.6-3.12's
//     layout without the unit field; --metric-only -x: one MetricGroup
//     row per metric value, named after the header's metric) and
//     -j (--metric-only -j of perf 6.2+ too: a row per metric value, named
//     after its key). Text as pasted in mail is accepted: collapsed whitespace, "> "
//     quote marks and locale number formats. The decimal mark is decided
//     per input from numbers that can only be read one way (metrics,
//     percentages and the footer are never grouped; counts are never
//     fractional); conflicting or missing evidence for a number that could
//     be read two ways is an error that says so, never a silent factor of
//     1000.
//   - perf report --stdio: NewPerfReportReader streams rows (with -g call
//     graphs) in constant memory; ParsePerfReport reads a whole report.
//   - pktgen: ParsePktgen (/proc/net/pktgen/DEV, also IMIX mode's
//     per-size counts), ParseKpktgend (/proc/net/pktgen/kpktgend_N),
//     ParsePktgenScript (what the kernel's samples/pktgen scripts print).
//   - ParseIperf3 (iperf3 --json), ParseTrafgen (trafgen's summary, of
//     netsniff-ng 0.5.x and 0.6.x),
//     ParseTestpmd (dpdk-testpmd's port and forward statistics),
//     ParseNetdevStats (/sys/class/net/DEV/statistics as an fs.FS),
//     ParseProcNetDev (/proc/net/dev), ParseTCQdisc (tc -s -j qdisc show).
//   - A Parser dispatches on a kind name (Kinds lists them, Detect
//     guesses one); it backs `vnetbench parse`. It knows perfparse's own
//     kinds and the tools' kinds it is given (PktgenKind, Iperf3Kind,
//     ...): the workloads declare theirs (workload.ParseKinds), so this
//     package names no workload.
//
// Malformed input is a *SyntaxError carrying the line number ("perfparse:
// FILE:LINE: msg"; WithFile adds the file name); it is bad input
// (errors.Is(err, fault.ErrInput)), which the command line reports with exit
// status 2.
package perfparse
