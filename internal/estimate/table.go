package estimate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/units"
)

// Defaults are the figures used where this host has not measured a
// workload under a class yet: conservative (slow) ends of what was
// measured, so a first estimate errs long. docs/estimates.md says where
// each comes from.
var Defaults = map[Class]struct {
	Boot, LabBoot, Restore, Overhead time.Duration
	PPS                              float64
}{
	// Debian's kernel under TCG: /init at 6 s, eth0 up at 6-8 s, with
	// image checks and QMP; a lab VM booted and loaded its modules in
	// 4.5 s on average over 104 boots on the 2-core CI machine.
	TCG: {Boot: 20 * time.Second, LabBoot: 30 * time.Second, Restore: 5 * time.Second, Overhead: 10 * time.Second, PPS: 30e3},
	// TCG inside TCG: Debian's cloud kernel up in 115-125 s on average
	// per workload (20-45 boots each on the 2-core CI machine), once in
	// 4 min; setup and
	// teardown of a sample 1.3-7.5 s on average per workload (pktgen,
	// trafgen, iperf3, vsock); pktgen into a tap the nested guest
	// drains: 0.4-8 Kpps seen.
	// A nested guest started from a saved state (runner's guest states):
	// RESTORE_TBD.
	TCGNested: {Boot: 3 * time.Minute, Restore: 30 * time.Second, Overhead: 15 * time.Second, PPS: 1e3},
	KVM:       {Boot: 10 * time.Second, LabBoot: 20 * time.Second, Restore: 5 * time.Second, Overhead: 5 * time.Second, PPS: 500e3},
	KVMNested: {Boot: 20 * time.Second, Restore: 10 * time.Second, Overhead: 10 * time.Second, PPS: 400e3},
}

// Entry is what the host measured for one workload under one class.
type Entry struct {
	BootS     float64   `json:"boot_s,omitempty"`
	Boots     int       `json:"boots,omitempty"`
	PPS       float64   `json:"pps,omitempty"`
	Counted   int       `json:"counted,omitempty"` // count-bound windows behind PPS
	OverheadS float64   `json:"overhead_s,omitempty"`
	Samples   int       `json:"samples,omitempty"` // samples behind OverheadS
	Updated   time.Time `json:"updated"`
}

// Table holds the host's measurements by "workload/class" ("lab/tcg"
// for a lab VM's own boot), the file estimates.json in the cache
// directory. Its zero value is empty: every figure is a default.
type Table struct {
	Schema  int               `json:"schema"`
	Entries map[string]*Entry `json:"entries"`
	// Steps are the build part's times per step kind (StepFetchSource,
	// ...), seconds per item.
	Steps map[string]*StepEntry `json:"steps,omitempty"`
}

// File is the table's file name in the cache directory.
const File = "estimates.json"

// weight caps how many earlier measurements a new one is averaged with:
// the table follows a host that changed (a new QEMU, a new CPU).
const weight = 20

// Load reads the table in dir; a missing file is an empty table.
func Load(dir string) (*Table, error) {
	t := &Table{Schema: 1, Entries: map[string]*Entry{}}
	b, err := os.ReadFile(filepath.Join(dir, File))
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal(b, t); err != nil {
		return &Table{Schema: 1, Entries: map[string]*Entry{}}, fmt.Errorf("%s: %w (delete it: the next run writes it again)", filepath.Join(dir, File), err)
	}
	if t.Entries == nil {
		t.Entries = map[string]*Entry{}
	}
	return t, nil
}

// Save writes the table into dir (created), atomically.
func (t *Table) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, File+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, File))
}

func key(workload string, c Class) string { return workload + "/" + string(c) }

// Observation is one run's measurements of a workload under a class.
type Observation struct {
	Workload string
	Class    Class
	Boots    []float64 // seconds per guest boot (a lab VM's: workload "lab")
	PPS      []float64 // count-bound windows: packets / window seconds
	Overhead []float64 // seconds per sample outside boot, warmup and window
	// Steps are build steps this run performed: seconds per item, by step
	// kind (Workload and Class are then unused).
	Steps map[string][]float64
}

// Add folds observations into the table at time now.
func (t *Table) Add(obs []Observation, now time.Time) {
	for _, o := range obs {
		t.addSteps(o.Steps, now)
		if len(o.Boots)+len(o.PPS)+len(o.Overhead) == 0 {
			continue
		}
		k := key(o.Workload, o.Class)
		e := t.Entries[k]
		if e == nil {
			e = &Entry{}
			t.Entries[k] = e
		}
		e.BootS, e.Boots = fold(e.BootS, e.Boots, o.Boots)
		e.PPS, e.Counted = fold(e.PPS, e.Counted, o.PPS)
		e.OverheadS, e.Samples = fold(e.OverheadS, e.Samples, o.Overhead)
		e.Updated = now.UTC()
	}
}

// fold averages xs into mean (of n values), with at most weight earlier
// values counted.
func fold(mean float64, n int, xs []float64) (float64, int) {
	for _, x := range xs {
		if x <= 0 {
			continue
		}
		w := min(n, weight-1)
		mean = (mean*float64(w) + x) / float64(w+1)
		n++
	}
	return mean, n
}

// Keys lists the table's entries, sorted.
func (t *Table) Keys() []string {
	var out []string
	for k := range t.Entries {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func measured(n int, noun string, at time.Time) string {
	return measuredOf(n, noun, "", at)
}

// measuredOf is measured's source of n nouns of what (" of Linux 6.1").
func measuredOf(n int, noun, of string, at time.Time) string {
	return "measured here, " + units.Plural(n, noun) + of + ", " + at.Format("2006-01-02")
}

func (t *Table) entry(workload string, c Class) *Entry {
	if t == nil {
		return nil
	}
	return t.Entries[key(workload, c)]
}

// WorkloadRestore is the table's key for a guest started from a saved
// state (its Boot), beside the guests' boots (WorkloadGuest) and the lab
// VMs' ("lab").
const WorkloadRestore = "guest-state"

// WorkloadGuest is the table's key for a guest's boot. The guest is the
// same whichever workload's cell boots it (cells of several workloads
// share one), so its boot is kept per class, not per workload: an
// estimate keyed by the first cell's workload changed with the run
// order.
const WorkloadGuest = "guest"

// GuestOf is the table's key for the boot of a guest whose kernel is
// Linux version v ("6.1"): guests of one class boot at their kernel's
// speed (Debian's 6.12 cloud kernel is not its 6.1). v "" is
// WorkloadGuest, a guest of any kernel.
func GuestOf(v string) string {
	if v == "" {
		return WorkloadGuest
	}
	return WorkloadGuest + "@" + v
}

// Boot implements Rates: a lab VM's boot ("lab") and a guest's start
// from a saved state (WorkloadRestore) by class; a guest's boot
// (GuestOf) as that kernel's boots measured under c, else as every
// guest boot measured under c, of any workload (tables written before
// WorkloadGuest hold them per workload: they count too) and any kernel.
func (t *Table) Boot(workload string, c Class) Figure {
	if workload == "lab" || workload == WorkloadRestore {
		if e := t.entry(workload, c); e != nil && e.Boots > 0 {
			return Figure{e.BootS, measured(e.Boots, "boot", e.Updated)}
		}
		d := Defaults[c]
		if workload == "lab" {
			return Figure{d.LabBoot.Seconds(), "default"}
		}
		return Figure{d.Restore.Seconds(), "default"}
	}
	v, ok := strings.CutPrefix(workload, WorkloadGuest+"@")
	if e := t.entry(workload, c); ok && e != nil && e.Boots > 0 {
		return Figure{e.BootS, measuredOf(e.Boots, "boot", " of Linux "+v, e.Updated)}
	}
	if mean, n, last := t.guestBoot(c); n > 0 {
		of := ""
		if ok { // none of its kernel's: the figure is not its own
			of = " of any guest kernel"
		}
		return Figure{mean, measuredOf(n, "boot", of, last)}
	}
	return Figure{Defaults[c].Boot.Seconds(), "default"}
}

// guestBoot is the mean of the n guest boots measured under c, of every
// entry but the lab VMs' and the saved states', and the last entry's
// time.
func (t *Table) guestBoot(c Class) (mean float64, n int, last time.Time) {
	if t == nil {
		return 0, 0, last
	}
	var sum float64
	for k, e := range t.Entries {
		if k == key("lab", c) || k == key(WorkloadRestore, c) || !strings.HasSuffix(k, "/"+string(c)) || e.Boots == 0 {
			continue
		}
		sum += e.BootS * float64(e.Boots)
		n += e.Boots
		if e.Updated.After(last) {
			last = e.Updated
		}
	}
	if n == 0 {
		return 0, 0, last
	}
	return sum / float64(n), n, last
}

// PPS implements Rates.
func (t *Table) PPS(workload string, c Class) Figure {
	if e := t.entry(workload, c); e != nil && e.Counted > 0 {
		return Figure{e.PPS, measured(e.Counted, "window", e.Updated)}
	}
	return Figure{Defaults[c].PPS, "default"}
}

// Overhead implements Rates.
func (t *Table) Overhead(workload string, c Class) Figure {
	if e := t.entry(workload, c); e != nil && e.Samples > 0 {
		return Figure{e.OverheadS, measured(e.Samples, "sample", e.Updated)}
	}
	return Figure{Defaults[c].Overhead.Seconds(), "default"}
}
