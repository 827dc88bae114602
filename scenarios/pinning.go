package scenarios

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// Busy is one busy host thread of a cell as the plan knows it.
type Busy struct {
	// Name says what it is: "kpktgend_0", "vhost-net worker", "vCPU 0",
	// "QEMU I/O thread".
	Name string
	// CPUs it may run on: a generator thread bound to a CPU (pktgen), or
	// the cell's pin; nil = any CPU.
	CPUs []int
	// Key is the scenario key that placed it ("pin.vhost"), "" when
	// nothing did or it is bound by its nature (kpktgend_N).
	Key string
}

// BusyThreads lists the host threads that are busy while c's traffic
// runs: the generator's (workload.HostThreads), the thread that moves the
// packets into the guest (the vhost-net worker per queue pair with
// tap+vhost, else QEMU's I/O thread) and the guest's vCPUs (the receiver),
// with the CPUs each may run on.
func (c *Cell) BusyThreads() []Busy {
	var out []Busy
	for _, t := range workload.HostThreads(c.Generator.Config) {
		b := Busy{Name: t.Name}
		if t.CPU >= 0 {
			b.CPUs = []int{t.CPU}
		} else if c.Pin.Generator != nil {
			b.CPUs, b.Key = c.Pin.Generator, "pin.generator"
		}
		out = append(out, b)
	}
	if c.Backend == BackendVhost {
		for q := range max(c.TapQueues(), 1) {
			name := "vhost-net worker"
			if c.TapQueues() > 1 {
				name += " " + strconv.Itoa(q)
			}
			b := Busy{Name: name}
			if c.Pin.Vhost != nil {
				b.CPUs, b.Key = c.Pin.Vhost, "pin.vhost"
			}
			out = append(out, b)
		}
	} else {
		out = append(out, Busy{Name: "QEMU I/O thread"})
	}
	for i := range max(c.Guest.VCPUs, 1) {
		b := Busy{Name: "vCPU " + strconv.Itoa(i)}
		if p := c.Pin.VCPU; p != nil {
			b.CPUs, b.Key = p, "pin.vcpu"
			if len(p) == c.Guest.VCPUs {
				b.CPUs = []int{p[i]} // vCPU i goes to the i-th CPU
			}
		}
		out = append(out, b)
	}
	return out
}

// HostWarnings returns what the scenario's thread placement means on a
// machine with h.NumCPU CPUs (0 = only the placement): a pinned vhost-net
// worker or vCPU that shares a CPU with a thread bound there (pktgen's
// kpktgend_N), and more busy threads than CPUs. Both are valid (the
// netdev thread pinned its vhost worker to kpktgend_0's CPU on purpose);
// the numbers then include the threads taking turns, and the warning says
// so. Each warning names the cells it applies to. Kernels booted in lab
// VMs count their lab VM's CPUs, not this machine's (h applies to the
// running kernel's cells only).
func (s *Scenario) HostWarnings(h Host) []string {
	out := s.hostWarnings(h)
	for i, w := range out {
		out[i] = fixSetWarning(w, s.File, s.Sets)
	}
	return out
}

func (s *Scenario) hostWarnings(h Host) []string {
	type warn struct {
		pos   schema.Pos
		key   string
		msg   string
		cells []string
	}
	var order []string
	byMsg := map[string]*warn{}
	add := func(i int, key, msg string) {
		w := byMsg[msg]
		if w == nil {
			w = &warn{pos: s.pos[i], key: key, msg: msg}
			byMsg[msg] = w
			order = append(order, msg)
		}
		if name := s.cells[i].Name; !slices.Contains(w.cells, name) {
			w.cells = append(w.cells, name)
		}
	}
	running := s.usesRunningKernel()
	for i := range s.cells {
		c := &s.cells[i]
		busy := c.BusyThreads()
		// Pinned threads that share a CPU with a thread bound to it.
		for _, p := range busy {
			if p.Key != "pin.vhost" && p.Key != "pin.vcpu" {
				continue
			}
			for _, b := range busy {
				if b.Key != "" || len(b.CPUs) != 1 || !slices.Contains(p.CPUs, b.CPUs[0]) {
					continue
				}
				where := "pinned to CPU " + schema.FormatCPUs(p.CPUs)
				if len(p.CPUs) > 1 {
					where = "pinned to CPUs " + schema.FormatCPUs(p.CPUs)
				}
				who := "the " + p.Name
				if strings.HasPrefix(p.Name, "vCPU") {
					who = p.Name
				}
				add(i, p.Key, fmt.Sprintf("%s: %s is %s, where %s runs (bound to CPU %d): the two share that CPU, and the numbers include them taking turns",
					p.Key, who, where, b.Name, b.CPUs[0]))
			}
		}
		if h.NumCPU > 0 && running && len(busy) > h.NumCPU {
			add(i, "generator."+c.Generator.Kind+".threads", fmt.Sprintf("%s are %d busy threads on %d CPUs: they take turns on the CPUs, and the numbers include that", describeBusy(busy), len(busy), h.NumCPU))
		}
	}
	var out []string
	for _, m := range order {
		w := byMsg[m]
		cells := w.cells
		more := ""
		if len(cells) > 4 {
			more = fmt.Sprintf(" and %d more", len(cells)-4)
			cells = cells[:4]
		}
		noun := "cell"
		if len(w.cells) > 1 {
			noun = "cells"
		}
		out = append(out, w.pos.Errorf(s.File, w.key, "%s (%s %s%s)", w.msg, noun, strings.Join(cells, ", "), more).Error())
	}
	return out
}

// describeBusy counts threads by kind: "4 kpktgend threads, 1 vhost-net
// worker and 1 vCPU".
func describeBusy(busy []Busy) string {
	var kinds []string
	n := map[string]int{}
	for _, b := range busy {
		k := strings.TrimRight(b.Name, "0123456789 _")
		if n[k] == 0 {
			kinds = append(kinds, k)
		}
		n[k]++
	}
	var parts []string
	for _, k := range kinds {
		name := k
		if !strings.HasSuffix(k, "worker") && !strings.HasSuffix(k, "thread") && k != "vCPU" {
			name += " thread" // kpktgend_N, a generator
		}
		parts = append(parts, units.Plural(n[k], name))
	}
	return units.AndList(parts)
}
