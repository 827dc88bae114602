package scenarios

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// Load decodes and validates a scenario. filename is used in error
// messages and as the default name; relative paths in the scenario are
// left as written. Every error is an *Error.
func Load(filename string, data []byte) (*Scenario, error) {
	return load(filename, data, "")
}

// LoadFile reads and loads a scenario file. Relative paths inside it
// (kernel images, modules, script_dir) are taken relative to the file's
// directory.
func LoadFile(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, &Error{File: path, Msg: "no such file; give a scenario file path or a built-in name (vnetbench list shows them)"}
		case errors.Is(err, fs.ErrPermission):
			return nil, &Error{File: path, Msg: "permission denied; make the file readable"}
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read: %v; give a readable scenario file", err)}
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		dir = filepath.Dir(path)
	}
	return load(path, data, dir)
}

// LoadFileFrom is LoadFile for a copy of a scenario file: relative paths
// inside it are taken relative to baseDir, the original file's directory
// (a lab VM's run reads a copy in the run directory).
func LoadFileFrom(path, baseDir string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return LoadFile(path) // the same read error, worded once
	}
	return load(path, data, baseDir)
}

func load(filename string, data []byte, baseDir string) (*Scenario, error) {
	root, err := parse(filename, data)
	if err != nil {
		return nil, err
	}
	d := &decoder{file: filename, all: true, pos: posMap{}}
	var doc document
	if err := d.decodeStruct(root, reflect.ValueOf(&doc).Elem(), ""); err != nil {
		return nil, err
	}
	if err := strictDecode(filename, data); err != nil {
		return nil, err
	}
	s := &Scenario{Name: doc.Name, Description: doc.Description, File: filename, Seed: doc.Seed}
	if s.Name == "" {
		s.Name = nameFromFile(filename)
	}
	if err := checkKernels(d, &doc); err != nil {
		return nil, err
	}
	s.Kernels = doc.Kernels
	for i := range s.Kernels {
		s.Kernels[i].Image = rel(baseDir, s.Kernels[i].Image)
		s.Kernels[i].Modules = rel(baseDir, s.Kernels[i].Modules)
	}

	// The generator kind is the outermost axis; each kind has its own
	// sub-axes (generator.KIND.*).
	var genAxis *axisRef
	var axes []axisRef
	for i := range d.axes {
		if d.axes[i].key == "generator" {
			genAxis = &d.axes[i]
		} else {
			axes = append(axes, d.axes[i])
		}
	}
	kinds := []string{doc.Generator.Kind}
	var genNode *yaml.Node
	if genAxis != nil {
		kinds, genNode = genAxis.values, genAxis.node
	}
	for _, a := range d.axes {
		if len(a.values) > 1 {
			s.Axes = append(s.Axes, Axis{Key: a.key, Values: a.values})
		}
	}
	total := 0
	for _, k := range kinds {
		n := 1
		for _, a := range axes {
			if a.scope == "" || a.scope == k {
				n *= len(a.values)
				if n > maxCells {
					break
				}
			}
		}
		total += n
		if total*len(s.Kernels) > maxCells {
			return nil, &Error{File: filename, Line: root.Line, Col: root.Column, Msg: fmt.Sprintf("the matrix expands to more than %d cells; shorten some axis lists or split the scenario", maxCells)}
		}
	}

	tu := newTargetUse(d.pos)
	for gi, k := range kinds {
		var scoped []axisRef
		for _, a := range axes {
			if a.scope == "" || a.scope == k {
				scoped = append(scoped, a)
			}
		}
		idx := make([]int, len(scoped))
		for {
			choice := map[*yaml.Node]int{}
			if genNode != nil {
				choice[genNode] = gi
			}
			for i, a := range scoped {
				choice[a.node] = idx[i]
			}
			pd := &decoder{file: filename, choice: choice, pos: posMap{}}
			var cd document
			if err := pd.decodeStruct(root, reflect.ValueOf(&cd).Elem(), ""); err != nil {
				return nil, err
			}
			c := cd.Cell
			c.Scenario = s.Name
			if p := c.Generator.Pktgen; p != nil && p.Mode != "script" && scriptAxis(scoped) {
				// mode: [simple, script]: script_dir and script belong
				// to the script cells only.
				p.ScriptDir, p.Script = "", ""
				delete(pd.pos, "generator.pktgen.script_dir")
				delete(pd.pos, "generator.pktgen.script")
			}
			if err := resolveCell(filename, &c, pd.pos, baseDir, tu); err != nil {
				return nil, err
			}
			for _, w := range cellWarnings(filename, &c, pd.pos) {
				if !slices.Contains(s.Warnings, w) {
					s.Warnings = append(s.Warnings, w)
				}
			}
			c.Axes = axesOf(&c)
			s.cells = append(s.cells, c)
			s.pos = append(s.pos, pd.pos)
			// odometer, last axis fastest
			i := len(idx) - 1
			for ; i >= 0; i-- {
				idx[i]++
				if idx[i] < len(scoped[i].values) {
					break
				}
				idx[i] = 0
			}
			if i < 0 {
				break
			}
		}
	}
	if err := tu.check(filename); err != nil {
		return nil, err
	}
	runs := 0
	for _, c := range s.cells {
		runs += c.Repetitions * len(s.Kernels)
	}
	if runs > maxRuns {
		return nil, at(filename, d.pos, "repetitions", "%d runs (cells x kernels x repetitions); at most %d: lower repetitions or shorten axis lists", runs, maxRuns)
	}
	listed := map[string]bool{}
	for _, a := range s.Axes {
		listed[a.Key] = true
	}
	s.cells, s.pos = nameCells(s.cells, s.pos, listed)
	return s, nil
}

var badNameChars = regexp.MustCompile(`[^a-z0-9._-]+`)

func nameFromFile(filename string) string {
	base := strings.ToLower(filepath.Base(filename))
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
	base = strings.Trim(badNameChars.ReplaceAllString(base, "-"), "-._")
	if len(base) > 64 {
		base = base[:64]
	}
	if base == "" {
		return "scenario"
	}
	return base
}

// rel resolves a path of a scenario loaded from disk (baseDir != ""):
// "~/x" becomes $HOME/x, a relative path is taken relative to the
// scenario file's directory. Load (baseDir "") leaves paths as written.
func rel(baseDir, p string) string {
	if p == "" || baseDir == "" || filepath.IsAbs(p) {
		return p
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
		return p
	}
	return filepath.Join(baseDir, p)
}

// at returns an error positioned at the node for path, or the closest
// parent that has one.
func at(file string, pos posMap, path string, format string, a ...any) error {
	e := &Error{File: file, Msg: fmt.Sprintf(format, a...)}
	for p := path; p != ""; {
		if n := pos[p]; n != nil && n.Line > 0 {
			e.Line, e.Col = n.Line, n.Column
			break
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return e
}

func checkKernels(d *decoder, doc *document) error {
	seen := map[string]int{}
	for i, k := range doc.Kernels {
		p := fmt.Sprintf("kernels[%d]", i)
		switch {
		case k.Label == "":
			return at(d.file, d.pos, p, "%s: label required, e.g. {label: stock} or {label: patched, image: /path/bzImage}", p)
		case k.Image != "" && k.Debian != "":
			return at(d.file, d.pos, p+".debian", "%s: give image or debian, not both", p)
		case k.Modules != "" && k.Image == "":
			return at(d.file, d.pos, p+".modules", "%s: modules belong to an image; add image: or drop modules:", p)
		}
		if j, dup := seen[k.Label]; dup {
			return at(d.file, d.pos, p+".label", "kernel label %q is used twice (kernels[%d] and kernels[%d]); labels name table columns and must differ", k.Label, j, i)
		}
		seen[k.Label] = i
	}
	gk := doc.Guest.Kernel
	switch {
	case gk.Label != "":
		return at(d.file, d.pos, "guest.kernel.label", "guest.kernel.label is not used (the guest kernel is not a compared column); remove it")
	case gk.Image != "" && gk.Debian != "":
		return at(d.file, d.pos, "guest.kernel.debian", "guest.kernel: give image or debian, not both")
	case gk.Modules != "" && gk.Image == "":
		return at(d.file, d.pos, "guest.kernel.modules", "guest.kernel: modules belong to an image; add image: or drop modules:")
	}
	return nil
}

// Perf target names.
const (
	TargetGenerator = "generator"
	TargetKpktgend  = "kpktgend"
	TargetVhost     = "vhost"
	TargetVCPU      = "vcpu"
	TargetQEMU      = "qemu"
	TargetTrafgen   = "trafgen"
	TargetIperf3    = "iperf3"
)

// generatorTarget is the perf/pin target name of a generator kind.
func generatorTarget(kind string) string {
	if kind == "pktgen" {
		return TargetKpktgend
	}
	return kind
}

// targetUse tracks whether each explicitly named perf target applies to
// at least one cell.
type targetUse struct {
	pos  posMap
	used map[string]bool // path of the list element -> used
}

func newTargetUse(pos posMap) *targetUse { return &targetUse{pos: pos, used: map[string]bool{}} }

func (t *targetUse) check(file string) error {
	for _, list := range []string{"perf.stat.targets", "perf.record.targets"} {
		for i := 0; ; i++ {
			p := fmt.Sprintf("%s[%d]", list, i)
			n := t.pos[p]
			if n == nil {
				break
			}
			if n.Line > 0 && n.Value != TargetGenerator && !t.used[p] { // defaults (Line 0) may not apply
				why := map[string]string{
					TargetKpktgend: "it needs a pktgen generator",
					TargetVhost:    "it needs backend tap+vhost",
					TargetTrafgen:  "it needs a trafgen generator",
					TargetIperf3:   "it needs an iperf3 generator",
				}[n.Value]
				return at(file, t.pos, p, "%s: target %s applies to no cell (%s); remove it", list, n.Value, why)
			}
		}
	}
	return nil
}

// resolveTargets replaces "generator" by the cell's generator target and
// drops targets the cell does not have.
func resolveTargets(c *Cell, list []string, path string, tu *targetUse) []string {
	var out []string
	for i, t := range list {
		ok := true
		switch t {
		case TargetGenerator:
			t = generatorTarget(c.Generator.Kind)
		case TargetKpktgend:
			ok = c.Generator.Kind == "pktgen"
		case TargetTrafgen, TargetIperf3:
			ok = c.Generator.Kind == t
		case TargetVhost:
			ok = c.Backend == "tap+vhost"
		}
		if ok {
			tu.used[fmt.Sprintf("%s[%d]", path, i)] = true
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// resolveCell fills computed defaults and checks rules that span fields.
func resolveCell(file string, c *Cell, pos posMap, baseDir string, tu *targetUse) error {
	errAt := func(path, format string, a ...any) error { return at(file, pos, path, format, a...) }
	c.Guest.Kernel.Image = rel(baseDir, c.Guest.Kernel.Image)
	c.Guest.Kernel.Modules = rel(baseDir, c.Guest.Kernel.Modules)
	if c.Backend == "tap" {
		c.Pin.Vhost = nil // no vhost worker on a plain tap
	}
	var genDur time.Duration
	switch c.Generator.Kind {
	case "pktgen":
		p := c.Generator.Pktgen
		p.ScriptDir = rel(baseDir, p.ScriptDir)
		const pp = "generator.pktgen"
		if _, set := pos[pp+".count"]; !set {
			if p.Duration == 0 {
				p.Count = 100000
			}
		} else if p.Count == 0 && p.Duration == 0 {
			return errAt(pp+".count", "generator.pktgen: count 0 without a duration never stops; set count (packets per thread) or duration")
		}
		if p.Burst > 1 {
			return errAt(pp+".burst", "generator.pktgen.burst %d is not supported on a %s backend: the kernel rejects burst > 1 on tap devices with errno 524 (ENOTSUPP, \"Unknown error 524\"); use burst: 0", p.Burst, c.Backend)
		}
		if p.CloneSkb > 0 {
			return errAt(pp+".clone_skb", "generator.pktgen.clone_skb %d is not supported on a %s backend: the kernel rejects clone_skb > 0 on tap devices with errno 524 (ENOTSUPP); use clone_skb: 0 (and burst: 0)", p.CloneSkb, c.Backend)
		}
		if p.Mode == "simple" && p.Threads > 1 {
			return errAt(pp+".threads", "generator.pktgen: mode simple (sample01) runs one thread, got threads %d; use mode: multiqueue for several threads", p.Threads)
		}
		if p.Mode == "script" && p.ScriptDir == "" {
			return errAt(pp+".mode", "generator.pktgen: mode script runs the kernel's samples/pktgen scripts and needs script_dir: the kernel source tree (e.g. script_dir: ~/linux)")
		}
		if p.Mode != "script" && p.ScriptDir != "" {
			return errAt(pp+".script_dir", "generator.pktgen.script_dir is only used with mode: script; remove it or set mode: script")
		}
		if p.Mode == "script" && p.Script == "" {
			p.Script = "pktgen_sample01_simple.sh"
		}
		if _, set := pos[pp+".script"]; set && p.Mode != "script" {
			return errAt(pp+".script", "generator.pktgen.script is only used with mode: script; remove it or set mode: script")
		}
		if p.Mode == "script" {
			// The sample scripts take -i -m -d -n -t -f -b -s -c -w -p and
			// choose the rest themselves.
			if p.XmitMode == "queue_xmit" {
				return errAt(pp+".xmit_mode", "generator.pktgen.xmit_mode is not passed to the sample scripts (they send with start_xmit; pktgen_bench_xmit_mode_queue_xmit.sh chooses queue_xmit itself); remove xmit_mode or use mode simple, multiqueue or burst_single_flow")
			}
			if p.UDPSrcMin != 0 || p.UDPSrcMax != 0 {
				return errAt(pp+".udp_src_min", "generator.pktgen.udp_src_min/max are not passed to the sample scripts (they choose the source ports); remove them or use a native mode")
			}
			if p.Script == "pktgen_sample01_simple.sh" && p.Threads > 1 {
				return errAt(pp+".threads", "generator.pktgen: pktgen_sample01_simple.sh sends from one thread (it ignores -t), got threads %d; use script: pktgen_sample02_multiqueue.sh", p.Threads)
			}
			if p.Script == "pktgen_sample01_simple.sh" && p.FirstCPU != 0 {
				return errAt(pp+".first_cpu", "generator.pktgen: pktgen_sample01_simple.sh always uses thread 0 (it ignores -f), got first_cpu %d; use script: pktgen_sample02_multiqueue.sh", p.FirstCPU)
			}
		}
		if p.UDPSrcMax != 0 && p.UDPSrcMax < p.UDPSrcMin {
			return errAt(pp+".udp_src_max", "generator.pktgen: udp_src_max %d is below udp_src_min %d", p.UDPSrcMax, p.UDPSrcMin)
		}
		if p.UDPDstMax != 0 && p.UDPDstMax < p.UDPDstMin {
			return errAt(pp+".udp_dst_max", "generator.pktgen: udp_dst_max %d is below udp_dst_min %d", p.UDPDstMax, p.UDPDstMin)
		}
		if c.Pin.Generator != nil {
			return errAt("pin.generator", "pin.generator: pktgen threads are per-CPU kernel threads (kpktgend_N runs on CPU N); remove pin.generator and set generator.pktgen.first_cpu")
		}
		if c.Queues == 0 {
			c.Queues = p.Threads
		} else if p.Mode == "multiqueue" && c.Queues < p.Threads {
			return errAt("queues", "queues %d: pktgen multiqueue sends on one tap queue per thread and has %d threads; use queues: auto or at least %d", c.Queues, p.Threads, p.Threads)
		}
		genDur = p.Duration
		if p.Count > 0 && p.Duration == 0 {
			genDur = -1 // count-bounded: unknown length
		}
	case "trafgen":
		genDur = c.Generator.Trafgen.Duration
		if genDur == 0 {
			return errAt("generator.trafgen.duration", "generator.trafgen.duration must be above 0 (trafgen runs until stopped)")
		}
	case "iperf3":
		ip := c.Generator.Iperf3
		if ip.Duration == 0 {
			return errAt("generator.iperf3.duration", "generator.iperf3.duration must be above 0, e.g. 10s")
		}
		if ip.Duration%time.Second != 0 || ip.Omit%time.Second != 0 {
			p := "generator.iperf3.duration"
			if ip.Duration%time.Second == 0 {
				p = "generator.iperf3.omit"
			}
			return errAt(p, "%s: iperf3 takes whole seconds; use e.g. 10s", p)
		}
		genDur = ip.Duration + ip.Omit
	}
	if c.Queues == 0 {
		c.Queues = 1
	}
	if c.Perf.Stat != nil {
		c.Perf.Stat.Targets = resolveTargets(c, c.Perf.Stat.Targets, "perf.stat.targets", tu)
		if len(c.Perf.Stat.Targets) == 0 {
			c.Perf.Stat = nil
		}
	}
	if c.Perf.Record != nil {
		c.Perf.Record.Targets = resolveTargets(c, c.Perf.Record.Targets, "perf.record.targets", tu)
		if len(c.Perf.Record.Targets) == 0 {
			c.Perf.Record = nil
		}
	}
	t := &c.Timeouts
	if t.Traffic == 0 {
		if genDur < 0 {
			t.Traffic = 10 * time.Minute
		} else {
			t.Traffic = c.Warmup + genDur + time.Minute
		}
	}
	if t.Cell == 0 {
		t.Cell = t.Boot + t.Setup + t.Traffic + t.Teardown
	}
	for _, ph := range []struct {
		name string
		d    time.Duration
	}{{"boot", t.Boot}, {"setup", t.Setup}, {"traffic", t.Traffic}, {"teardown", t.Teardown}} {
		if ph.d == 0 {
			return errAt("timeouts."+ph.name, "timeouts.%s must be above 0", ph.name)
		}
	}
	if genDur > 0 && t.Traffic < c.Warmup+genDur {
		return errAt("timeouts.traffic", "timeouts.traffic %s is shorter than warmup + generator duration (%s); raise it or leave it unset", formatDuration(t.Traffic), formatDuration(c.Warmup+genDur))
	}
	return nil
}

// scriptAxis reports whether generator.pktgen.mode is an axis that
// lists script.
func scriptAxis(axes []axisRef) bool {
	for _, a := range axes {
		if a.key == "generator.pktgen.mode" && slices.Contains(a.values, "script") {
			return true
		}
	}
	return false
}

// axesOf maps every axis key that applies to c to its canonical value.
func axesOf(c *Cell) map[string]string {
	m := map[string]string{}
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		for _, f := range fieldsOf(v.Type()) {
			fv := v.FieldByIndex(f.index)
			p := join(path, f.key)
			switch {
			case f.sf.Type == reflect.TypeOf(Generator{}):
				g := fv.Interface().(Generator)
				m["generator"] = g.Kind
				for _, gf := range fieldsOf(fv.Type()) {
					if gf.key == g.Kind {
						walk(fv.FieldByIndex(gf.index).Elem(), join(p, gf.key))
					}
				}
			case f.tg.Get("axis") == "1":
				if p == "pin.vhost" && c.Backend != "tap+vhost" {
					continue
				}
				m[p] = format(fv, f.tg)
			case fv.Kind() == reflect.Struct && fv.Type() != durationType:
				walk(fv, p)
			}
		}
	}
	walk(reflect.ValueOf(c).Elem(), "")
	return m
}

// axisOrder is the order of name parts after backend, generator and qdisc.
var axisOrder = sync.OnceValue(func() []string {
	var keys []string
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for _, f := range fieldsOf(t) {
			p := join(path, f.key)
			switch {
			case f.sf.Type == reflect.TypeOf(Generator{}):
				for _, gf := range fieldsOf(f.sf.Type) {
					walk(gf.sf.Type.Elem(), join(p, gf.key))
				}
			case f.sf.Tag.Get("axis") == "1":
				keys = append(keys, p)
			case f.sf.Type.Kind() == reflect.Struct && f.sf.Type != durationType:
				walk(f.sf.Type, p)
			}
		}
	}
	walk(reflect.TypeOf(Cell{}), "")
	return keys
})

// namePart renders one axis value as a cell-name part.
func namePart(key, v string) string {
	last := key[strings.LastIndex(key, ".")+1:]
	switch key {
	case "pin.vhost", "pin.vcpu", "pin.generator":
		who := map[string]string{"vhost": "vhost", "vcpu": "vcpu", "generator": "gen"}[last]
		if v == "none" {
			return who + "-unpinned"
		}
		return who + "-pin" + v
	case "generator.pktgen.mode", "guest.sink", "generator.iperf3.protocol":
		return v
	case "generator.iperf3.reverse":
		if v == "true" {
			return "reverse"
		}
		return "forward"
	}
	short := map[string]string{
		"queues": "q", "first_cpu": "cpu", "pkt_size": "pkt", "burst": "burst", "clone_skb": "clone",
		"delay": "delay", "cpus": "cpus", "rate": "rate", "bitrate": "bitrate", "vcpus": "vcpus",
		"memory": "mem", "xmit_mode": "xmit", "threads": "t", "parallel": "p",
	}[last]
	if short == "" {
		short = last + "-"
	}
	if v == "" || v == "default" {
		return short + "-default"
	}
	return short + v
}

// nameCells names every cell and drops duplicates (cells that differ only
// in an axis that does not apply to them, such as pin.vhost on a plain
// tap). Names: backend/generator[/qdisc] then one part per other axis that
// the file lists with several values; pins also appear whenever set.
func nameCells(cells []Cell, pos []posMap, listed map[string]bool) ([]Cell, []posMap) {
	varies := func(k string) bool { return listed[k] }
	var out []Cell
	var outPos []posMap
	seen := map[string]bool{}
	for i, c := range cells {
		parts := []string{c.Backend}
		gen := c.Generator.Kind
		switch gen {
		case "pktgen":
			gen += "-t" + strconv.Itoa(c.Generator.Pktgen.Threads)
		case "iperf3":
			gen += "-p" + strconv.Itoa(c.Generator.Iperf3.Parallel)
		}
		parts = append(parts, gen)
		if c.Qdisc != "" {
			parts = append(parts, c.Qdisc)
		} else if varies("qdisc") {
			parts = append(parts, "qdisc-default")
		}
		for _, k := range axisOrder() {
			v, ok := c.Axes[k]
			if !ok {
				continue
			}
			switch k {
			case "backend", "qdisc", "generator.pktgen.threads", "generator.iperf3.parallel":
				continue
			case "pin.vhost", "pin.vcpu", "pin.generator":
				if v != "none" || varies(k) {
					parts = append(parts, namePart(k, v))
				}
				continue
			}
			if varies(k) {
				parts = append(parts, namePart(k, v))
			}
		}
		c.Name = strings.Join(parts, "/")
		if seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		out = append(out, c)
		outPos = append(outPos, pos[i])
	}
	return out, outPos
}

// cellWarnings lists settings of c that are valid but probably not what
// the author meant.
func cellWarnings(file string, c *Cell, pos posMap) []string {
	var ws []string
	warn := func(path, format string, a ...any) {
		ws = append(ws, at(file, pos, path, format, a...).Error())
	}
	if p := c.Generator.Pktgen; p != nil && c.Qdisc != "" && p.XmitMode == "" && p.Mode != "script" {
		warn("qdisc", "qdisc %s is attached but pktgen's default xmit mode (start_xmit) sends past it; set generator.pktgen.xmit_mode: queue_xmit to send through it, or xmit_mode: start_xmit to say that is meant", c.Qdisc)
	}
	if ip := c.Generator.Iperf3; ip != nil && ip.Protocol == "udp" && ip.Bitrate == "" {
		warn("generator.iperf3.protocol", "iperf3 UDP without bitrate sends at iperf3's default 1 Mbit/s; set generator.iperf3.bitrate (e.g. 10G)")
	}
	return ws
}
