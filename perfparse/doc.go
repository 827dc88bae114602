// Package perfparse reads the outputs the harness depends on (perf stat,
// perf report, /proc/net/pktgen, iperf3 --json, netdev counters, tc qdisc
// stats, trafgen) into typed records in base units. It is pure: an
// io.Reader in, records out; no exec, no statistics, no formatting.
package perfparse
