// Package workload is the registry of traffic workloads (pktgen, trafgen,
// iperf3, ...) and the interfaces they implement. A workload lives in one
// package under internal/workload/ and is registered by one line in
// internal/workload/all; that package alone knows its YAML section
// (Config), what a host needs for it (Needs), its plan lines and how it
// runs (Generator), the metrics it produces and how its table reads.
// scenarios, runner, report, doctor and plan ask the registry (Lookup,
// All); none of them switches on a workload's name.
//
// This package is pure: interfaces, plain data and the registry. It
// imports no workload and starts nothing.
package workload

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/vnetbench/vnetbench/internal/schema"
)

// Workload is one traffic experiment.
type Workload interface {
	// Name is the workload's key under generator: in a scenario
	// ("pktgen"), its samples' generator label and its default perf target.
	Name() string
	// Doc is one line for the scenario reference.
	Doc() string
	// New returns an empty config; decoding fills it (its Fields carry
	// the defaults).
	New() Config
}

// Config is a workload's section of one cell: the decoded YAML keys under
// generator.NAME, resolved. Cells are copied by value (schema.Clone, a
// shallow copy of the struct), so a Config keeps slices read-only once
// Resolve returns.
type Config interface {
	schema.Fielder
	// Resolve fills defaults computed from other keys and checks rules
	// that span keys or involve the rest of the cell, once per cell after
	// its axis values are chosen. Errors come from r (file:line:col).
	Resolve(r *Resolver) error
	// Length is how long the traffic runs, for the default
	// timeouts.traffic; known is false when it runs until a count (its
	// length is unknown in advance).
	Length() (d time.Duration, known bool)
	// NamePart is the workload's part of the cell name ("pktgen-t4") and
	// the keys it already says ("threads"), which the name leaves out.
	NamePart() (part string, says []string)
	// Runner: what the host needs, the plan's lines, the generator.
	Runner
}

// Targeter is a Workload whose threads have their own perf/pin target
// name (pktgen: "kpktgend"); otherwise the target is its Name.
type Targeter interface {
	Target() string
}

// Target is w's perf/pin target name.
func Target(w Workload) string {
	if t, ok := w.(Targeter); ok {
		return t.Target()
	}
	return w.Name()
}

// Counter is a Config that can run until a packet count instead of for
// a time (Length's known false): an estimate of a run divides Packets by
// an expected rate, and the shorter form of a long run bounds the window
// by time with Within.
type Counter interface {
	// Packets is how many packets one window sends before it ends at the
	// count, all threads together (0 = it does not end at a count).
	Packets() uint64
	// Within returns the keys of the section and their values, as the
	// YAML (and --set) writes them, that end the window after d instead
	// of at the count.
	Within(d time.Duration) []Setting
}

// Setting is a key of a workload's section and a value as YAML writes it.
type Setting struct {
	Key, Value string
}

// Queuer is a Config that wants a tap queue pair per thread when the
// scenario says queues: auto.
type Queuer interface {
	AutoQueues() int
}

// CPUUser is a Config that names CPUs (kernel threads per CPU, worker
// counts): the host must have them.
type CPUUser interface {
	// CPUsNeeded is the highest CPU it uses plus one (or its worker
	// count): a lab VM needs at least that many vCPUs.
	CPUsNeeded() int
	// CheckCPUs returns an error (h.Errorf) when this machine lacks them.
	CheckCPUs(h *HostCheck) error
}

// HostThread is one busy host thread of a generator as the plan knows
// it: its name and the CPU it is bound to (-1 = wherever the scheduler
// puts it).
type HostThread struct {
	Name string
	CPU  int
}

// ThreadLister is a Config that says which busy threads its generator
// runs on the host (pktgen: kpktgend_N, a kernel thread bound to CPU N).
// Plan and run use them to warn about pins that share a generator's CPU
// and about more busy threads than CPUs. Without it a generator counts as
// one unbound thread.
type ThreadLister interface {
	HostThreads() []HostThread
}

// HostThreads returns c's busy host threads (one unbound thread when c
// does not say).
func HostThreads(c Config) []HostThread {
	if l, ok := c.(ThreadLister); ok {
		return l.HostThreads()
	}
	return []HostThread{{Name: "generator", CPU: -1}}
}

// Cell is the rest of a cell as a workload's Resolve sees it.
type Cell struct {
	Backend      string // "tap" or "tap+vhost"
	Queues       int    // tap queue pairs; 0 = auto
	Qdisc        string // root qdisc; "" = the kernel's default
	PinGenerator []int  // pin.generator; nil = unpinned
}

// Resolver is what Resolve may ask and say about the cell it resolves.
type Resolver struct {
	Cell     Cell
	file     string
	path     string // "generator.NAME"
	pos      schema.Pos
	axes     map[string][]string
	rel      func(string) string
	warnings []string
}

// NewResolver is for scenarios: section is the config's path
// ("generator.pktgen"), pos the cell's positions, axes the file's axis
// lists by key, rel resolves a relative path.
func NewResolver(file, section string, pos schema.Pos, axes map[string][]string, rel func(string) string, cell Cell) *Resolver {
	return &Resolver{Cell: cell, file: file, path: section, pos: pos, axes: axes, rel: rel}
}

// Key returns the full path of key in the section ("generator.pktgen.burst").
func (r *Resolver) Key(key string) string { return schema.Join(r.path, key) }

// Errorf returns an error at key of the section ("" = the section).
func (r *Resolver) Errorf(key, format string, a ...any) error {
	return r.pos.Errorf(r.file, r.Key(key), format, a...)
}

// CellErrorf returns an error at a key of the cell ("queues", "pin.generator").
func (r *Resolver) CellErrorf(path, format string, a ...any) error {
	return r.pos.Errorf(r.file, path, format, a...)
}

// Warnf records a warning (valid, probably unintended) at key of the section.
func (r *Resolver) Warnf(key, format string, a ...any) {
	r.warnings = append(r.warnings, r.Errorf(key, format, a...).Error())
}

// CellWarnf records a warning at a key of the cell.
func (r *Resolver) CellWarnf(path, format string, a ...any) {
	r.warnings = append(r.warnings, r.CellErrorf(path, format, a...).Error())
}

// Warnings returns the warnings recorded.
func (r *Resolver) Warnings() []string { return r.warnings }

// Given reports whether the file sets key of the section.
func (r *Resolver) Given(key string) bool {
	n := r.pos[r.Key(key)]
	return n != nil && n.Line > 0
}

// Forget drops key's position: the key does not apply to this cell (a
// later Given says false).
func (r *Resolver) Forget(key string) { delete(r.pos, r.Key(key)) }

// AxisValues returns the values the file lists for key of the section
// when it is an axis, else nil.
func (r *Resolver) AxisValues(key string) []string { return r.axes[r.Key(key)] }

// Path resolves a path from the scenario file: "~/x" is in $HOME, a
// relative path is relative to the file (Load without a file leaves it).
func (r *Resolver) Path(p string) string { return r.rel(p) }

// HostCheck is what CheckCPUs knows about the machine.
type HostCheck struct {
	NumCPU int
	// Have describes the machine's CPUs for messages: "this machine has
	// 2 CPUs (0-1)".
	Have string
	errf func(key, format string, a ...any) error
}

// NewHostCheck is for scenarios: errf positions an error at a key of the
// config's section.
func NewHostCheck(numCPU int, have string, errf func(key, format string, a ...any) error) *HostCheck {
	return &HostCheck{NumCPU: numCPU, Have: have, errf: errf}
}

// Errorf returns an error at key of the config's section.
func (h *HostCheck) Errorf(key, format string, a ...any) error { return h.errf(key, format, a...) }

var (
	mu       sync.RWMutex
	registry []Workload
)

// Register adds w. It panics when the name is empty or taken: a
// registration is a programming error, found by any test.
func Register(w Workload) {
	mu.Lock()
	defer mu.Unlock()
	name := w.Name()
	if name == "" || slices.ContainsFunc(registry, func(o Workload) bool { return o.Name() == name }) {
		panic(fmt.Sprintf("workload: bad or duplicate registration %q", name))
	}
	registry = append(registry, w)
}

// Unregister removes the workload named name (for tests that register a
// toy workload).
func Unregister(name string) {
	mu.Lock()
	defer mu.Unlock()
	registry = slices.DeleteFunc(registry, func(o Workload) bool { return o.Name() == name })
}

// Lookup returns the workload named name.
func Lookup(name string) (Workload, bool) {
	mu.RLock()
	defer mu.RUnlock()
	for _, w := range registry {
		if w.Name() == name {
			return w, true
		}
	}
	return nil, false
}

// All returns the registered workloads in registration order.
func All() []Workload {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(registry)
}

// Names returns the registered names in registration order.
func Names() []string {
	var out []string
	for _, w := range All() {
		out = append(out, w.Name())
	}
	return out
}

// Pather is a Config that says which path its packets take through the
// host's stack, for tables that must name it (a latency table: does the
// load pass the tap's qdisc?): "socket, through the qdisc",
// "start_xmit, past the qdisc".
type Pather interface {
	Path() string
}

// PathOf returns c's path, "" when it does not say.
func PathOf(c Config) string {
	if p, ok := c.(Pather); ok {
		return p.Path()
	}
	return ""
}
