package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/internal/ledger"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/session"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// cmdDoctor reports what this host can run and what is missing.
func cmdDoctor(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("doctor", "[--clean | --leftovers]", stderr)
	clean := fs.Bool("clean", false, "remove what killed vnetbench processes left behind (what their ledgers record and no process uses)")
	only := fs.Bool("leftovers", false, "list only what killed vnetbench processes left behind")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("doctor: takes no arguments")
	}
	if *clean && *only {
		// --clean would win silently: a user who asked for a list gets
		// removals.
		return usageErrorf("doctor: give --clean or --leftovers, not both: --leftovers lists what killed runs left, --clean removes it and lists what it kept")
	}
	if *clean {
		return cleanLeftovers(stdout)
	}
	if *only {
		ls := runner.ReadLedgers()
		writeLeftovers(stdout, ls)
		if len(existing(ls.Leftovers)) == 0 {
			fmt.Fprintln(stdout, "nothing left behind")
		}
		return nil
	}
	d := runner.RunDoctor(ctx, proc.Real{})
	writeDoctor(ctx, stdout, d, cl.loadTable(io.Discard, ""))
	writeLeftovers(stdout, runner.ReadLedgers())
	return nil
}

// existing drops the leftovers that no longer exist (their ledger line
// is all that is left).
func existing(ls []runner.Leftover) []runner.Leftover {
	return slices.DeleteFunc(ls, func(l runner.Leftover) bool { return l.Gone })
}

// writeLeftovers lists what killed processes left behind, counts the
// ledgers of ended processes that list nothing that exists, and names
// the files in the ledger directory that are no ledger.
func writeLeftovers(w io.Writer, ls runner.Ledgers) {
	left := existing(slices.Clone(ls.Leftovers))
	n := ls.Ended()
	if len(left) == 0 && n == 0 && len(ls.Skipped) == 0 {
		return
	}
	fmt.Fprintln(w)
	if len(left) > 0 {
		fmt.Fprintln(w, "left behind by killed vnetbench processes (their ledgers say so; 'vnetbench doctor --clean' removes those not in use):")
		for _, l := range left {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	switch {
	case n == 1:
		fmt.Fprintln(w, "1 ledger of an ended vnetbench process lists nothing that still exists; 'vnetbench doctor --clean' removes it")
	case n > 1:
		fmt.Fprintf(w, "%d ledgers of ended vnetbench processes list nothing that still exists; 'vnetbench doctor --clean' removes them\n", n)
	}
	writeSkipped(w, ls.Skipped)
}

// writeSkipped names the files in the ledger directory doctor does not
// read as ledgers.
func writeSkipped(w io.Writer, sk []ledger.Skipped) {
	for _, s := range sk {
		fmt.Fprintf(w, "skipped %s: %s; doctor leaves it alone\n", s.File, s.Why)
	}
}

// cleanLeftovers removes what killed processes left behind and no
// process uses, and the ledgers of ended processes that list nothing,
// and says what it kept and why.
func cleanLeftovers(w io.Writer) error {
	c, err := runner.Clean()
	for _, l := range c.Done {
		fmt.Fprintf(w, "removed %s\n", l)
	}
	for _, s := range c.Ledgers {
		fmt.Fprintf(w, "removed ledger %s (%s, pid %d, is gone; it listed nothing left)\n", s.File, runner.OwnerName(s.Owner), s.Owner.PID)
	}
	for _, l := range c.Found.Leftovers {
		if l.Busy != "" {
			fmt.Fprintf(w, "kept %s\n", l)
		}
	}
	writeSkipped(w, c.Found.Skipped)
	if len(existing(c.Found.Leftovers)) == 0 {
		fmt.Fprintln(w, "nothing left behind")
	}
	return err
}

func writeDoctor(ctx context.Context, w io.Writer, d *runner.Doctor, tab *estimate.Table) {
	fmt.Fprintln(w, "host:")
	for _, c := range d.Checks {
		mark := "ok  "
		switch {
		case !c.OK && c.Warn:
			mark = "warn"
		case !c.OK:
			mark = "MISS"
		}
		fmt.Fprintf(w, "  %s %-18s %s\n", mark, c.Name, c.Detail)
		if !c.OK && c.Fix != "" {
			fmt.Fprintf(w, "       %-18s -> %s\n", "", c.Fix)
		}
	}
	fmt.Fprintln(w, "\nbuilt-in scenarios:")
	for _, b := range scenarios.Builtins() {
		s, err := scenarios.Resolve(b.Name)
		if err != nil {
			fmt.Fprintf(w, "  %-30s broken: %v\n", b.Name, err)
			continue
		}
		cells := s.Expand()
		v := scenarioVerdict(ctx, d, tab, b.Name, cells)
		fmt.Fprintf(w, "  %-30s %s\n", b.Name, strings.ReplaceAll(v, "\n", "\n"+strings.Repeat(" ", 35)))
	}
}

// labKernelFlag is the --kernel doctor suggests for a scenario that
// cannot run on this host's kernel but can in a lab VM.
const labKernelFlag = "--kernel " + labKernelSpec

// labKernelSpec is labKernelFlag's value, labKernel its kernel.
const labKernelSpec = "stock=debian:6.1"

var labKernel = scenarios.Kernel{Label: "stock", Debian: "6.1"}

// labShorter is what doctor adds to a lab-mode suggestion on a host
// without KVM when the run would pass run's default limit: its estimate
// under TCG inside TCG (from tab, the host's measured rates) and the
// shorter form ("" within the limit).
func labShorter(name string, lab []scenarios.Cell, tab *estimate.Table) string {
	st := qemu.KVMStatus{Why: "no KVM"}
	cells, _ := runner.Distinct(lab)
	var labels []string
	for _, c := range cells {
		if !slices.Contains(labels, c.Kernel.Label) {
			labels = append(labels, c.Kernel.Label)
		}
	}
	e, _ := session.EstimateCells(scenarios.Order(cells, 1), labels, st, tab, true)
	if e.Total <= session.DefaultMaxTime {
		return ""
	}
	sp := session.Spec{Name: name, Kernels: []scenarios.Kernel{labKernel}}
	s, err := sp.Load()
	if err != nil {
		return ""
	}
	v := fmt.Sprintf(" (about %s under TCG, which run refuses past --max-time %s", estimate.Duration(e.Total), estimate.Duration(session.DefaultMaxTime))
	if sh := session.ShorterForm(sp, s, st, tab, session.DefaultMaxTime); sh != nil {
		v += fmt.Sprintf("; shorter, about %s: %s", estimate.Duration(sh.Estimate), sh.Command)
	}
	return v + ")"
}

// scenarioVerdict is doctor's verdict on a scenario's cells: a line,
// then, when run would refuse them here, what it refuses and its fix, a
// line each, from the list plan and run --dry-run print (runner.Doctor's
// Missing). Cells for lab kernels (image, debian or tree) run in lab
// VMs: their pktgen, vhost-net and qdisc needs are met there, so only
// what the lab needs here is judged (and, with nested KVM, whether the
// lab kernels ship the kvm modules). A scenario that cannot run here but
// would in lab mode gets the command that runs it there.
func scenarioVerdict(ctx context.Context, d *runner.Doctor, tab *estimate.Table, name string, cells []scenarios.Cell) string {
	if miss := d.Missing(cells); len(miss) > 0 {
		return cannotRun(d, tab, name, cells, miss)
	}
	host, other := scenarios.SplitRunning(cells)
	labs := scenarios.KernelLabels(other)
	mode := strings.Join(append([]string{d.LabMode()}, d.LabKVM(ctx, cells)...), "; ")
	var v string
	switch {
	case len(labs) == 0:
		v = "can run here"
	case len(host) == 0:
		v = fmt.Sprintf("runs in lab mode (%s)", mode)
	default:
		v = fmt.Sprintf("can run here; kernels %s run in lab mode (%s)", strings.Join(labs, ", "), mode)
	}
	// Cells whose guest kernel is too old for their workload (vsock
	// sockmap before 6.4) will read n/a.
	for _, n := range runner.GuestKernelNotes(cells) {
		v += "; " + n
	}
	return v
}

// cannotRun is the verdict on a scenario whose cells run would refuse
// here (miss): the lab-mode command that runs it, when a lab would not
// be refused too, then each refusal and its fix.
func cannotRun(d *runner.Doctor, tab *estimate.Table, name string, cells []scenarios.Cell, miss []runner.Refusal) string {
	v := "cannot run here"
	lab := make([]scenarios.Cell, 0, len(cells))
	for _, c := range cells {
		if c.Kernel.Running() {
			c.Kernel = labKernel
		}
		lab = append(lab, c)
	}
	if len(d.Missing(lab)) == 0 {
		v += "; in lab mode: vnetbench run " + name + " " + labKernelFlag
		if d.Lab.Accel != qemu.KVM {
			v += labShorter(name, lab, tab)
		}
	}
	for _, r := range miss {
		// The verdict's first line names the lab-mode command.
		v += "\n- " + r.Why + "; fix: " + strings.ReplaceAll(r.Fix, runner.LabHint, "lab mode")
	}
	return v
}
