package scenarios

import (
	"fmt"
	"strings"

	"github.com/vnetbench/vnetbench/internal/schema"
)

// referenceIntro is the prose before the generated key table.
const referenceIntro = `A scenario is one YAML file (or a built-in name: ` + "`vnetbench list`" + `).
Decoding is strict: an unknown key, a wrong type or a value outside the
allowed set is an error with file:line:col, the allowed values and, for
near misses, a suggestion (` + "`vnetbench validate FILE`" + ` checks a file without
touching the host).

**Values.** Durations are Go durations (` + "`500ms`, `120s`, `2m`" + `); a bare number
is an error. Sizes use binary units (` + "`512MiB`, `1GiB`" + `). CPU lists use the
kernel's cpulist syntax as a string or number (` + "`0`, `\"0-3\"`, `\"0,2\"`" + `) or
` + "`none`" + `. In a scenario file, relative paths are relative to the file and
` + "`~/`" + ` is the home directory.

**Axes.** A key marked *axis* below may be given a YAML list: the scenario
then expands into the cartesian product of all its lists, one cell per
combination (` + "`backend: [tap, tap+vhost]`" + ` gives two cells). Giving several
generator kinds (` + "`generator: {iperf3: {...}, trafgen: {...}}`" + `) is an axis too;
generator sub-keys only combine with their own kind. Every other key takes a
single value. A CPU list written as a YAML list is an axis of CPU lists:
` + "`vhost: [none, 0]`" + ` compares unpinned against CPU 0; pin to several CPUs with
one string (` + "`vhost: \"0-1\"`" + `). At most 1024 cells and 20000 runs.

**Cell names.** A cell is named by the path of its values:
` + "`backend/generator/qdisc/...`" + `, e.g. ` + "`tap+vhost/pktgen-t4/fq_codel/vhost-pin0`" + `.
The backend and the generator (` + "`pktgen-tN`" + ` with N threads, ` + "`iperf3-pN`" + ` with N
streams, ` + "`trafgen`" + `) always appear, the qdisc when set, a pin when set
(` + "`vhost-pin0`, `vcpu-pin1-2`, `gen-pin3`" + `), and every other axis only when the
file lists several values for it (` + "`q4`, `burst0`, `burst-default`, `pkt1500`, `vcpus2`, `mem2GiB`" + `, ...).
Combinations that are the same experiment are one cell, run once: pin.vhost
on a plain tap (which has no vhost worker) silently, others with a note from
` + "`" + `validate` + "`" + `, ` + "`" + `plan` + "`" + ` and ` + "`" + `run` + "`" + ` naming the axis (` + "`" + `queues 1 and auto resolve to
the same cell, tap/pktgen-t1/q1` + "`" + `), as are two cells whose kernel-facing
commands (tap, qdisc, QEMU, pinning, perf, the workload's commands and /proc
writes) come out identical. The kernel is not part of the name.

**Pinning.** ` + "`" + `plan` + "`" + ` (and ` + "`" + `run --dry-run` + "`" + `) print each pin as the ` + "`" + `taskset -p
-c CPUS TID` + "`" + ` its sched_setaffinity equals (the vhost-net worker, each vCPU,
the generator's threads; thread ids as placeholders) and pktgen's
` + "`" + `kpktgend_N` + "`" + ` as bound to CPU N; reproduce.sh has the same lines with the
real thread ids. ` + "`" + `plan` + "`" + ` and ` + "`" + `run` + "`" + ` warn when a pinned vhost-net worker or
vCPU shares a CPU with a kpktgend thread, and when a cell's busy threads
(generator threads, the vhost-net workers or QEMU's I/O thread, the vCPUs)
outnumber the CPUs: valid (the netdev thread pinned its vhost worker onto
kpktgend_0's CPU on purpose), but the numbers then include threads taking
turns. A tap+vhost cell finds one vhost-net worker per queue pair: threads
` + "`" + `vhost-<QEMU pid>` + "`" + ` of QEMU's process (Linux 6.4+) or kernel threads of that
name (older kernels). A cell with ` + "`" + `pin.vhost` + "`" + ` that finds fewer fails (it
would run unpinned); an unpinned one gets a warning. pktgen makes
` + "`" + `kpktgend_N` + "`" + ` in every network namespace: the run takes the ones that
appeared with its own namespace, for perf and the busy share.

**What perf@qemu counts.** The ` + "`" + `qemu` + "`" + ` target is ` + "`" + `perf -p` + "`" + ` on QEMU's process:
on Linux 6.4+ that includes the in-process vhost-net workers, before 6.4 it
does not (they are kernel threads). Each sample records it as the label
` + "`" + `qemu_target` + "`" + ` (` + "`" + `qemu+vhost` + "`" + `, ` + "`" + `qemu (vhost kthreads apart)` + "`" + `), the perf table
says it, and warns when its columns counted different threads.

**Kernels** are the column axis of every report: each cell runs once per
kernel label. The default is the running kernel (` + "`[{label: running}]`" + `). A
kernel with ` + "`image`" + ` (and ` + "`modules`" + `) or ` + "`debian`" + ` is booted in a lab VM and the
cells run inside it, e.g. ` + "`[{label: stock, debian: \"6.1\"}, {label: patched, image: ~/linux/arch/x86/boot/bzImage, modules: ~/linux/mods/lib/modules/6.1.0}]`" + `.
A lab kernel's datapath runs inside a VM (its guest is nested in it), the
running kernel's on the host: samples record it (` + "`" + `nested` + "`" + `), reports mark
such columns ` + "`" + `stock (nested)` + "`" + `, and a report that puts ` + "`" + `running` + "`" + ` beside lab
kernels warns that its changes include the nesting overhead.

**Run order.** Every cell runs ` + "`repetitions`" + ` times. Runs go in rounds (all
first repetitions, then all second ones, ...), shuffled within each round by
a seeded generator, so slow drift hits every compared variant alike. The seed
is printed by ` + "`plan`" + ` and ` + "`run`" + `; ` + "`--seed N`" + ` or ` + "`seed:`" + ` reproduces an order.

**Tap limits.** pktgen's ` + "`burst`" + ` > 1 and ` + "`clone_skb`" + ` > 0 are rejected by tap
devices (errno 524, ENOTSUPP) and by this decoder. ` + "`burst: default`" + ` leaves
burst unwritten (the kernel's default, 1); ` + "`burst: 0`" + ` writes 0, which the
kernel also treats as 1.

**Qdiscs.** ` + "`qdisc`" + ` takes any tc qdisc kind. Known kinds (` + "`fq_codel`, `noqueue`, `pfifo_fast`, `fq`, `sfq`, `pfifo`, `cake`, `netem`, `mq`" + `, ...)
are accepted; another lowercase word is accepted as a kind this list does not
know, unless it is within two edits of a known one (then it is reported as a
typo). pktgen sends past the qdisc unless ` + "`xmit_mode: queue_xmit`" + `; the qdisc
is still attached (a tap that stops its queue when full does so only with a
qdisc). ` + "`xmit_mode: start_xmit`" + ` says that is meant (no warning).

An example, the built-in ` + "`thread-pktgen-vhost-pin0`" + `:

` + "```yaml\n%s```" + `

Every key, with its type, default and unit (generated from the schema; a test
keeps this table and the code in step):
`

// Reference returns the scenario language reference as Markdown: the
// rules above and a table of every key, generated from the same field
// lists that decode a file (every registered workload's included).
// docs/scenarios.md embeds it; a test keeps the two equal.
func Reference() string {
	var b strings.Builder
	example, _ := BuiltinData("thread-pktgen-vhost-pin0")
	fmt.Fprintf(&b, referenceIntro, example)
	b.WriteString("\n")
	b.WriteString(schema.Reference(new(document).Fields()))
	return b.String()
}
