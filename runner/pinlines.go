package runner

import (
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/scenarios"
)

// PinLines returns the thread placement of one sample of c as commands,
// for plan and run --dry-run: the taskset equivalent of each
// sched_setaffinity Pin makes (vCPU threads and the vhost-net worker once
// QEMU runs, the generator's threads once it starts), with placeholders
// for thread ids known only at run time, and a comment for each generator
// thread bound to a CPU by its nature (kpktgend_N). Unpinned threads get
// no line. reproduce.sh records the same commands with the real ids.
func PinLines(c *scenarios.Cell) []string {
	var out []string
	for _, b := range c.BusyThreads() {
		switch {
		case b.Key == "" && len(b.CPUs) == 1:
			out = append(out, "# "+b.Name+" is bound to CPU "+strconv.Itoa(b.CPUs[0])+" (a per-CPU kernel thread)")
		case b.Key != "":
			out = append(out, tasksetLine(b.CPUs, placeholder(b.Name), describeThread(b.Name)))
		}
	}
	return out
}

// placeholder names the thread id a pin line acts on: "VCPU0_TID",
// "VHOST_TID", "GENERATOR_TID".
func placeholder(name string) string {
	switch {
	case strings.HasPrefix(name, "vCPU "):
		return "VCPU" + strings.TrimPrefix(name, "vCPU ") + "_TID"
	case strings.HasPrefix(name, "vhost-net worker"):
		if q := strings.TrimSpace(strings.TrimPrefix(name, "vhost-net worker")); q != "" {
			return "VHOST" + q + "_TID"
		}
		return "VHOST_TID"
	}
	return "GENERATOR_TID"
}

// describeThread says how to find a thread a pin line acts on.
func describeThread(name string) string {
	switch {
	case strings.HasPrefix(name, "vCPU "):
		i := strings.TrimPrefix(name, "vCPU ")
		return name + `: QEMU's thread "CPU ` + i + `/KVM" (or "CPU ` + i + `/TCG")`
	case strings.HasPrefix(name, "vhost-net worker"):
		return name + ": the thread named vhost-QEMU_PID"
	}
	return name + ", once the generator runs"
}

// pinNotes are the taskset equivalents of Pin(u, what, tids, cpus,
// perThread) for reproduce.sh, with the real thread ids.
func pinNotes(what string, tids, cpus []int, perThread bool) []string {
	if len(cpus) == 0 {
		return nil
	}
	var out []string
	for i, tid := range tids {
		set, name := cpus, what
		if perThread && len(cpus) == len(tids) {
			set, name = []int{cpus[i]}, what+" "+strconv.Itoa(i)
		}
		out = append(out, tasksetLine(set, strconv.Itoa(tid), name))
	}
	return out
}

// tasksetLine is `taskset -p -c CPUS TID  # what`: what Pin does to one
// thread with sched_setaffinity.
func tasksetLine(cpus []int, tid, what string) string {
	return proc.Quote([]string{"taskset", "-p", "-c", schema.FormatCPUs(cpus), tid}) + "  # " + what
}
