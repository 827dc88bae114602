// Package scenarios decodes and validates vnetbench scenario YAML and expands
// a scenario into named, ordered cells. It is pure: bytes in, a validated
// value out; it never executes programs or probes the host.
package scenarios
