package runner

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// GuestBoots reports, for cells in run order, which samples boot a guest
// first. As Run does: a guest is reused across cells that differ only in
// host knobs, tap and tap+vhost cells that can share one two-NIC guest
// do, and a guest boots whenever the next cell needs another. Each
// kernel's cells count apart (a lab VM runs its own).
func GuestBoots(cells []scenarios.Cell) []bool {
	keys := guestKeys(cells, false)
	out := make([]bool, len(cells))
	prev := map[string]string{} // a kernel's last guest
	for i := range cells {
		l := cells[i].Kernel.Label
		k, seen := prev[l]
		out[i] = !seen || keys[i] != k
		prev[l] = keys[i]
	}
	return out
}

// guestKeys is the guest each of cells runs on, as its lab's run (or the
// running kernel's) tells guests apart (guests.key): within each
// kernel's cells, one paired guest for its tap and tap+vhost cells.
// acrossKernels leaves the kernel out: the same guest in every lab.
func guestKeys(cells []scenarios.Cell, acrossKernels bool) []string {
	out := make([]string, len(cells))
	byLabel := map[string][]int{}
	var labels []string
	for i := range cells {
		l := cells[i].Kernel.Label
		if _, ok := byLabel[l]; !ok {
			labels = append(labels, l)
		}
		byLabel[l] = append(byLabel[l], i)
	}
	for _, l := range labels {
		var group []scenarios.Cell
		for _, i := range byLabel[l] {
			c := cells[i]
			if acrossKernels {
				c.Kernel = scenarios.Kernel{}
			}
			group = append(group, c)
		}
		gs := &guests{paired: pairedGuests(group)}
		for j, i := range byLabel[l] {
			out[i] = gs.key(&group[j])
		}
	}
	return out
}

// RunOrder is the order a run goes through cells (in scenarios.Order):
// the cells of each kernel booted in a lab VM, labels in the order of
// labels (the scenario's), then the running kernel's. The progress
// counts samples in this order.
func RunOrder(cells []scenarios.Cell, labels []string) []scenarios.Cell {
	host, labCells := scenarios.SplitRunning(cells)
	order, byLabel := scenarios.ByKernel(labCells, labels)
	var out []scenarios.Cell
	for _, l := range order {
		out = append(out, byLabel[l]...)
	}
	return append(out, host...)
}

// EstimateSamples describes cells, in RunOrder, for the estimate on a
// host whose KVM probe gave st. With labsInTurn (lab VMs one after the
// other), a lab's guest that an earlier lab booted under TCG starts
// from that lab's saved state (GuestStates) instead of booting.
func EstimateSamples(cells []scenarios.Cell, st qemu.KVMStatus, labsInTurn bool) []estimate.Sample {
	boots, keys := GuestBoots(cells), guestKeys(cells, true)
	booted := map[string]string{} // a nested guest's key: the lab that booted it first
	labClass := estimate.ClassOf(labAccel(st), false)
	seen := map[string]bool{}
	out := make([]estimate.Sample, len(cells))
	for i := range cells {
		c := &cells[i]
		accel, _, err := PlanAccel(c, st)
		if err != nil {
			accel = qemu.TCG // refused before it runs; estimated as the slow case
		}
		s := estimate.Sample{Kernel: kernelLabel(c), Workload: c.Generator.Kind, GuestKernel: guestVersion(c),
			Class: estimate.ClassOf(string(accel), !c.Kernel.Running()), Boot: boots[i], Warmup: c.Warmup}
		if !c.Kernel.Running() && !seen[c.Kernel.Label] {
			seen[c.Kernel.Label] = true
			s.Lab, s.LabClass = true, labClass
		}
		if s.Boot && s.Class == estimate.TCGNested && labsInTurn {
			k := keys[i]
			if first, ok := booted[k]; ok && first != c.Kernel.Label {
				s.Boot, s.Restore = false, true
			} else if !ok {
				booted[k] = c.Kernel.Label
			}
		}
		s.Window, s.Packets = window(c)
		out[i] = s
	}
	return out
}

// guestVersion is the Linux version of c's guest kernel ("6.1") as the
// scenario names it (guest.kernel; a lab's default Debian guest or its
// /boot image), "" when the running kernel's guest is the host's to
// pick (its /boot image, or Debian's): the estimate then takes the
// class's boots, and a plan reads the same on every host.
func guestVersion(c *scenarios.Cell) string {
	if c.Kernel.Running() && c.Guest.Kernel.Debian == "" && c.Guest.Kernel.Image == "" {
		return ""
	}
	if k := guestKernelOf(c, ""); k.ok {
		return fmt.Sprintf("%d.%d", k.major, k.minor)
	}
	return ""
}

// releaseVersion is the Linux version ("6.12") of a guest kernel's
// release as a run recorded it ("6.12.117+deb12-cloud-amd64", or the
// samples' guest label "VM (6.1.0-57-cloud-amd64)"); "" when none.
func releaseVersion(rel string) string {
	rel = strings.TrimSuffix(strings.TrimPrefix(rel, "VM ("), ")")
	if maj, min, ok := linuxVersion(rel); ok {
		return fmt.Sprintf("%d.%d", maj, min)
	}
	return ""
}

// window is a cell's window: its duration, or the packets it sends
// until its count (with the duration that caps it, 0 = none). A
// count-bound cell whose workload does not count packets takes its
// traffic deadline.
func window(c *scenarios.Cell) (time.Duration, uint64) {
	d, known := c.Generator.Config.Length()
	if known {
		return d, 0
	}
	if ct, ok := c.Generator.Config.(workload.Counter); ok && ct.Packets() > 0 {
		return d, ct.Packets()
	}
	return c.Timeouts.Traffic, 0
}

func labAccel(st qemu.KVMStatus) string {
	if st.Usable {
		return string(qemu.KVM)
	}
	return string(qemu.TCG)
}

// Observations are what a finished run in dir measured for the estimate
// table: guest boots by guest kernel and class (estimate.GuestOf: a
// guest serves the cells of several workloads; its kernel from the
// samples' guest label, else env.json's guest_kernel, else none: the
// class's), count-bound rates and per-sample overhead by workload and
// class, and each lab VM's boot. Samples that started before since (a
// resumed run's earlier ones) and failed samples are left out; a sample
// without an accel label (a run before it had one) takes env.json's
// accel, where all the run's guests had one. cells are the run's; st is
// the host's KVM probe.
func Observations(dir string, cells []scenarios.Cell, st qemu.KVMStatus, since time.Time) ([]estimate.Observation, error) {
	set, err := results.Load(dir)
	if err != nil {
		return nil, err
	}
	env, envErr := results.ReadEnv(dir)
	if envErr != nil {
		env = &results.Env{}
	}
	byCell := map[string]*scenarios.Cell{}
	for i := range cells {
		byCell[kernelLabel(&cells[i])+"\x00"+cells[i].Name] = &cells[i]
	}
	type okey struct {
		workload string
		class    estimate.Class
	}
	obs := map[okey]*estimate.Observation{}
	var order []okey
	get := func(k okey) *estimate.Observation {
		if obs[k] == nil {
			obs[k] = &estimate.Observation{Workload: k.workload, Class: k.class}
			order = append(order, k)
		}
		return obs[k]
	}
	bootSeen := map[string]bool{}
	labRan := map[string]bool{} // kernels with a sample from this run
	for _, s := range set.Samples {
		c := byCell[s.Kernel+"\x00"+s.Cell]
		accel := s.Labels["accel"]
		if accel == "" && (env.Accel == string(qemu.KVM) || env.Accel == string(qemu.TCG)) {
			accel = env.Accel
		}
		if c == nil || s.Error != "" || len(s.Metrics) == 0 || s.Start.Before(since) || accel == "" {
			continue
		}
		if !c.Kernel.Running() {
			labRan[s.Kernel] = true
		}
		o := get(okey{c.Generator.Kind, estimate.ClassOf(accel, !c.Kernel.Running())})
		if b := s.Labels["boot_s"]; b != "" && !bootSeen[s.Kernel+"\x00"+b] {
			// A reused guest repeats its boot time; the boot is the
			// guest's, not the workload's: a guest serves several.
			bootSeen[s.Kernel+"\x00"+b] = true
			g := get(okey{estimate.GuestOf(sampleGuestVersion(s, env)), o.Class})
			g.Boots = appendFloat(g.Boots, b)
		}
		if b := s.Labels[LabelRestoreS]; b != "" && !bootSeen[s.Kernel+"\x00r"+b] {
			bootSeen[s.Kernel+"\x00r"+b] = true
			r := get(okey{estimate.WorkloadRestore, o.Class})
			r.Boots = appendFloat(r.Boots, b)
		}
		if ov, ok := s.Metrics[metric.CellOverheadS]; ok {
			pr, _ := strconv.ParseFloat(s.Labels["perf_report_s"], 64)
			o.Overhead = append(o.Overhead, ov+pr)
		}
		if _, packets := window(c); packets > 0 && s.WindowS > 0 {
			o.PPS = append(o.PPS, float64(packets)/s.WindowS)
		}
	}
	if envErr == nil {
		steps := map[string][]float64{}
		for _, label := range slices.Sorted(maps.Keys(env.Kernels)) {
			if ke := env.Kernels[label]; ke != nil && ke.Build != nil {
				for kind, secs := range ke.Build.Timings {
					steps[kind] = append(steps[kind], secs)
				}
			}
		}
		if len(steps) > 0 {
			o := get(okey{"build", "host"})
			o.Steps = steps
		}
		for label, ke := range env.Kernels {
			if ke != nil && labRan[label] && ke.Extra["lab_boot_s"] != "" {
				// The lab VM's boot and its setup (modules, mounts)
				// until the run inside starts.
				boot, _ := strconv.ParseFloat(ke.Extra["lab_boot_s"], 64)
				setup, _ := strconv.ParseFloat(ke.Extra["lab_setup_s"], 64)
				o := get(okey{"lab", estimate.ClassOf(labAccel(st), false)})
				o.Boots = appendFloat(o.Boots, strconv.FormatFloat(boot+setup, 'f', 1, 64))
			}
		}
	}
	out := make([]estimate.Observation, 0, len(order))
	for _, k := range order {
		out = append(out, *obs[k])
	}
	return out, nil
}

// sampleGuestVersion is the Linux version of the guest kernel sample s
// ran on: its guest label, else its kernel's guest_kernel in env.json
// (a lab kernel's under kernels, the running kernel's at the top).
func sampleGuestVersion(s results.Sample, env *results.Env) string {
	if v := releaseVersion(s.Labels["guest"]); v != "" {
		return v
	}
	if ke := env.Kernels[s.Kernel]; ke != nil {
		return releaseVersion(ke.Extra["guest_kernel"])
	}
	return releaseVersion(env.Extra["guest_kernel"])
}

func appendFloat(xs []float64, s string) []float64 {
	if x, err := strconv.ParseFloat(s, 64); err == nil && x > 0 {
		return append(xs, x)
	}
	return xs
}
