// Package report turns samples (Runs, from Load) into a format-free table
// model with statistics, and renders it as text, markdown, CSV, JSON, Go
// benchmark format or HTML. It also compares two runs and decides CI gates.
// It never starts processes, never probes the host (the runner fills
// results.Env), never parses tool output (perfparse does) and never writes
// run directories (the results package does).
//
// # Public API
//
// report stays a public package: its entry points (Load, Build, Render,
// CompareRuns, Compare, Decide and the Write* renderers) and their options
// take and return report's own names. MinEffect is report's own type;
// Runs and Env are the module's internal results set and environment under
// public aliases, so other programs can load and render runs without
// reaching into internal/; perfparse likewise imports nothing of the
// module.
//
// # Model and renderers
//
// Build computes Stats (n, mean, median, stddev, CV, min, max, the CI of
// the median by order statistics at its own level, the least at or above
// 95% its n gives, 97% at 6 runs; the harmonic mean for rates; all from
// github.com/aclements/go-moremath, the module's one statistics library)
// per cell, column and metric, Comparisons against the base column (the
// verdict SAME, DIFFERENT or UNKNOWN of internal/verdict for the change
// columns, its own test's p for the p column), and Tables:
// thread-style tables (rows grouped by backend, one column per kernel
// label, a context header cell), size sweeps, perf stat and perf report
// side by side, benchstat-style comparisons, and one "harness and
// diagnostics" table (KindHarness: the results.Diagnostics metrics, the
// harness's self-measurements and cross-checks, one row per cell). Caveats
// are values (Stats.Warnings, Delta.TooFew, Table.Notes), not errors. A
// symbol absent from one repetition's perf report list counts as 0.
//
// A benchstat-style cell is "median ± CI%" when the CI of the median is
// finite (n >= 6), else the median and the range of the runs,
// "11.88k (n=2, 8.95..14.8k)"; a table note says which, and every output
// (legend, HTML caption, JUnit, JSON and CSV ci_level) names the CI's own
// level (Stats.CILevel, CIName), never a fixed 95%. Tables marked
// Detail (the per-metric tables when there is only one column, and the
// harness table) are left out of text and markdown unless Options.Details
// (--details): the default text is what one mails. JSON, CSV, benchfmt and
// HTML hold everything. Sample warnings that are word for word the same in
// several cells (the TCG warning) are reported once. WriteText,
// WriteMarkdown, WriteCSV, WriteJSON, results.WriteBenchfmt and WriteHTML
// (one file, inline SVG charts with error bars) draw them; Render picks
// one by name.
//
// Text and markdown tables are drawn by olekukonko/tablewriter, widths in
// display cells, except one layout: the thread's tables (thread, versus,
// latency and perf stat tables) keep a hand-written grid, because
// tablewriter (v1.1) cannot draw a header cell that spans the label
// columns and holds the wrapped context (a horizontally merged header cell
// takes the whole context's width in each column it spans), nor a group
// label that wraps down through the rules between its rows ("TAP +" above
// "vhost-net"). The grid measures in display cells too.
//
// Names in a report (kernel labels, cells, axes, metric keys, warnings)
// come from files the report did not write: text, markdown, HTML and gate
// lines show their control characters and line breaks as escapes
// (\x0a), LAVA output keeps only [A-Za-z0-9._-] of them, benchfmt turns
// them into "_" in names and units and spaces in values, so no name can
// forge a line, a result or a shell command.
//
// # Gates
//
// CompareRuns compares two sets cell by cell (KernelSides splits one run
// of two kernels into them) and applies Gates parsed from
// --fail-on ("tx_pps<-3%,lost_pps>+0%"): a gate trips only on a
// significant change beyond its threshold. Without --fail-on every shown
// metric with a direction is gated at 0% in its bad direction, except the
// Diagnostics unless named in Metrics. CompareResult.Err returns a
// *GateError (a measured failure); bad input is fault.ErrInput.
package report
