package scenarios

import (
	"fmt"
	"maps"
	"slices"

	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// Expand returns the scenario's cells: for each kernel (in file order)
// every combination of the axes (cartesian product, deterministic order,
// last axis fastest), with Kernel set. Cell names do not contain the kernel.
func (s *Scenario) Expand() []Cell {
	out := make([]Cell, 0, len(s.Kernels)*len(s.cells))
	for _, k := range s.Kernels {
		for _, c := range s.cells {
			c.Kernel = k
			c.Axes = maps.Clone(c.Axes)
			c = c.clone()
			out = append(out, c)
		}
	}
	return out
}

// clone deep-copies the pointer and slice parts of a cell so callers can
// modify one cell without touching another.
func (c Cell) clone() Cell {
	c.Pin.Vhost = slices.Clone(c.Pin.Vhost)
	c.Pin.VCPU = slices.Clone(c.Pin.VCPU)
	c.Pin.Generator = slices.Clone(c.Pin.Generator)
	if c.Generator.Config != nil {
		c.Generator.Config = schema.Clone(c.Generator.Config)
	}
	if p := c.Perf.Stat; p != nil {
		cp := *p
		cp.Targets, cp.Events = slices.Clone(p.Targets), slices.Clone(p.Events)
		c.Perf.Stat = &cp
	}
	if p := c.Perf.Record; p != nil {
		cp := *p
		cp.Targets = slices.Clone(p.Targets)
		c.Perf.Record = &cp
	}
	if l := c.Latency; l != nil {
		cp := *l
		cp.Sizes = slices.Clone(l.Sizes)
		c.Latency = &cp
	}
	return c
}

// Order returns the run order: one entry per repetition of every cell
// (Rep set, 0-based). Repetition rounds run one after another; inside each
// round the cells are shuffled with a generator seeded by seed, so slow
// drift (thermal, background load) hits every compared variant alike, and
// then gathered by GuestKey (the groups in the order of their first
// shuffled member, the cells of a group in shuffled order), so a round
// boots each guest configuration once; a round starts with the guest the
// previous one ended with. The same cells and seed always give the same
// order, on every platform.
func Order(cells []Cell, seed int64) []Cell {
	rng := splitmix64(uint64(seed))
	maxRep := 0
	for _, c := range cells {
		maxRep = max(maxRep, c.Repetitions)
	}
	var out []Cell
	for r := range maxRep {
		var round []Cell
		for _, c := range cells {
			if r < c.Repetitions {
				c.Rep = r
				round = append(round, c)
			}
		}
		for i := len(round) - 1; i > 0; i-- { // Fisher-Yates
			j := int(rng.below(uint64(i + 1)))
			round[i], round[j] = round[j], round[i]
		}
		last := ""
		if len(out) > 0 {
			last = out[len(out)-1].GuestKey()
		}
		out = append(out, groupByGuest(round, last)...)
	}
	return out
}

// groupByGuest gathers round by GuestKey, keeping the cells' order inside
// a group and ordering the groups by their first member, except that the
// group of key first (the guest already running) comes first.
func groupByGuest(round []Cell, first string) []Cell {
	var keys []string
	groups := map[string][]Cell{}
	for _, c := range round {
		k := c.GuestKey()
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], c)
	}
	if i := slices.Index(keys, first); i > 0 {
		keys = append(append([]string{first}, keys[:i]...), keys[i+1:]...)
	}
	out := make([]Cell, 0, len(round))
	for _, k := range keys {
		out = append(out, groups[k]...)
	}
	return out
}

// GuestKey identifies the guest VM a cell needs: the kernel under test,
// the backend and NIC (queues, tap name), the guest's configuration and
// the QEMU arguments and vsock device of the workload. Cells with the
// same key differ only in host-side knobs (qdisc, pinning, generator) and
// share one boot.
func (c *Cell) GuestKey() string {
	var qemuArgs []string
	var cid uint32
	if c.Generator.Config != nil {
		n := c.Generator.Config.Needs()
		qemuArgs, cid = n.QEMUArgs, n.VsockCID
	}
	return fmt.Sprintf("%s|%s|%s|%d|%s|%d|%d|%s|%q|%+v|%q|%d", c.Kernel.Label, c.Kernel.Image, c.Backend, c.TapQueues(), c.TapName,
		c.Guest.VCPUs, c.Guest.MemoryMiB, c.Guest.Accel, c.Guest.Cmdline, c.Guest.Kernel, qemuArgs, cid)
}

// TapQueues is the number of tap (and virtio-net) queue pairs: queues when
// set, else what the workload wants (pktgen: one per thread), else 1.
func (c *Cell) TapQueues() int {
	if c.Queues > 0 {
		return c.Queues
	}
	if q, ok := c.Generator.Config.(workload.Queuer); ok && q.AutoQueues() > 1 {
		return q.AutoQueues()
	}
	return 1
}

// splitmix64 is a tiny PRNG with a fixed, documented output sequence (so
// a printed seed reproduces a run order with any Go version).
type splitmix64 uint64

func (s *splitmix64) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// below returns a uniform value in [0, n) (rejection sampling).
func (s *splitmix64) below(n uint64) uint64 {
	limit := ^uint64(0) - ^uint64(0)%n
	for {
		if v := s.next(); v < limit {
			return v % n
		}
	}
}

// usesRunningKernel reports whether any kernel under test is the running
// kernel, i.e. whether the cells run on this host (not in a lab VM).
func (s *Scenario) usesRunningKernel() bool {
	return slices.ContainsFunc(s.Kernels, Kernel.Running)
}

// CheckHost checks the scenario against the machine it will run on: every
// CPU it names (pins, pktgen threads, trafgen workers) must exist. Kernels
// booted in lab VMs are not checked (the lab sizes its VMs with
// CPUsNeeded). h.NumCPU <= 0 skips the check. Errors are *Error.
func (s *Scenario) CheckHost(h Host) error {
	return fixSetErr(s.checkHost(h), s.Sets)
}

func (s *Scenario) checkHost(h Host) error {
	if h.NumCPU <= 0 || !s.usesRunningKernel() {
		return nil
	}
	have := fmt.Sprintf("this machine has %d CPUs (0-%d)", h.NumCPU, h.NumCPU-1)
	if h.NumCPU == 1 {
		have = "this machine has 1 CPU (0)"
	}
	// e.g. "pin.vhost: CPU 7 does not exist: this machine has 2 CPUs (0-1); ..."
	for i, c := range s.cells {
		pos := s.pos[i]
		for _, p := range []struct {
			key  string
			cpus []int
		}{{"pin.vhost", c.Pin.Vhost}, {"pin.vcpu", c.Pin.VCPU}, {"pin.generator", c.Pin.Generator}} {
			for _, cpu := range p.cpus {
				if cpu >= h.NumCPU {
					return pos.Errorf(s.File, p.key, "%s: CPU %d does not exist: %s; use CPUs below %d", p.key, cpu, have, h.NumCPU)
				}
			}
		}
		if u, ok := c.Generator.Config.(workload.CPUUser); ok {
			section := "generator." + c.Generator.Kind
			hc := workload.NewHostCheck(h.NumCPU, have, func(key, format string, a ...any) error {
				return pos.Errorf(s.File, schema.Join(section, key), format, a...)
			})
			if err := u.CheckCPUs(hc); err != nil {
				return err
			}
		}
	}
	return nil
}

// CPUsNeeded returns the number of CPUs a host needs to run every cell
// (Cell.CPUsNeeded of each). A lab VM for this scenario needs at least
// this many vCPUs.
func (s *Scenario) CPUsNeeded() int {
	n := 1
	for i := range s.cells {
		n = max(n, s.cells[i].CPUsNeeded())
	}
	return n
}

// CPUsNeeded returns the number of CPUs the cell names: the highest CPU
// of a pin or of the workload's threads (pktgen's first_cpu + threads)
// plus one, or the workload's worker count (trafgen); at least 1. A lab VM
// running the cell needs that many vCPUs: inside it these are the lab's
// CPU numbers.
func (c *Cell) CPUsNeeded() int {
	n := 1
	for _, l := range [][]int{c.Pin.Vhost, c.Pin.VCPU, c.Pin.Generator} {
		for _, cpu := range l {
			n = max(n, cpu+1)
		}
	}
	if u, ok := c.Generator.Config.(workload.CPUUser); ok {
		n = max(n, u.CPUsNeeded())
	}
	return n
}

// Pinned reports whether the cell pins a thread to CPUs (pin.vhost,
// pin.vcpu or pin.generator).
func (c *Cell) Pinned() bool {
	return c.Pin.Vhost != nil || c.Pin.VCPU != nil || c.Pin.Generator != nil
}

// Param is one resolved parameter of a cell: its YAML path and canonical
// value ("" = unset).
type Param = schema.Param

// Params lists every resolved parameter of the cell in schema order, with
// the YAML paths of the scenario reference (generator.pktgen.count, ...).
// Of the generator only the cell's workload appears; perf.stat and
// perf.record show "off" when absent.
func (c Cell) Params() []Param {
	return schema.Values(c.Fields())
}
