// Package runner runs scenario cells on a real host: network namespace, tap,
// qdisc, QEMU guest, traffic generator, perf, pinning, and a LIFO teardown.
// It is the only package that starts processes or touches devices.
package runner
