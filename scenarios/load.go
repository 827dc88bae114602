package scenarios

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// Load decodes and validates a scenario. filename is used in error
// messages and as the default name; relative paths in the scenario are
// left as written. Every error is an *Error. sets override keys of the
// file before it is decoded (see Set).
func Load(filename string, data []byte, sets ...Set) (*Scenario, error) {
	return load(filename, data, "", sets)
}

// LoadFile reads and loads a scenario file. Relative paths inside it
// (kernel images, modules, script_dir) are taken relative to the file's
// directory.
func LoadFile(path string, sets ...Set) (*Scenario, error) {
	data, err := safefs.ReadFile(path, safefs.MaxSmall)
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
		if errors.As(err, new(*safefs.TooLargeError)) {
			return nil, &Error{File: path, Msg: fmt.Sprintf("longer than %d MiB; give a scenario file", safefs.MaxSmall>>20)}
		}
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read: %v; give a readable scenario file", err)}
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		dir = filepath.Dir(path)
	}
	return load(path, data, dir, sets)
}

// LoadFileFrom is LoadFile for a copy of a scenario file: relative paths
// inside it are taken relative to baseDir, the original file's directory
// (a lab VM's run reads a copy in the run directory).
func LoadFileFrom(path, baseDir string, sets ...Set) (*Scenario, error) {
	data, err := safefs.ReadFile(path, safefs.MaxSmall)
	if err != nil {
		return LoadFile(path) // the same read error, worded once
	}
	return load(path, data, baseDir, sets)
}

func load(filename string, data []byte, baseDir string, sets []Set) (*Scenario, error) {
	root, err := parse(filename, data)
	if err != nil {
		return nil, err
	}
	if err := applySets(root, sets); err != nil {
		return nil, err
	}
	s, err := decode(filename, root, baseDir)
	if err != nil {
		return nil, fixSetErr(err, sets)
	}
	s.Sets = sets
	for i, w := range s.Warnings {
		s.Warnings[i] = fixSetWarning(w, filename, sets)
	}
	return s, nil
}

// decode decodes and validates a scenario's YAML tree.
func decode(filename string, root *yaml.Node, baseDir string) (*Scenario, error) {
	// One pass decodes and checks everything: every element of every axis
	// list and every generator kind.
	d := schema.NewDecoder(filename)
	var doc document
	if err := d.Decode(root, &doc); err != nil {
		return nil, err
	}
	pos := d.Pos()
	s := &Scenario{Name: doc.Name, Description: doc.Description, File: filename, Seed: doc.Seed, PerPatch: doc.PerPatch}
	if s.Name == "" {
		s.Name = nameFromFile(filename)
	}
	if err := checkKernels(filename, pos, &doc); err != nil {
		return nil, err
	}
	s.Kernels = doc.Kernels
	for i := range s.Kernels {
		s.Kernels[i] = s.Kernels[i].resolve(baseDir)
	}
	x := &expansion{file: filename, baseDir: baseDir, doc: &doc, pos: pos, s: s, tu: newTargetUse(pos)}
	x.splitAxes(d.Axes())
	if err := x.checkSize(root); err != nil {
		return nil, err
	}
	for gi, k := range x.kinds {
		if err := x.expandKind(gi, k); err != nil {
			return nil, err
		}
	}
	if err := x.tu.check(filename); err != nil {
		return nil, err
	}
	if err := checkRuns(filename, pos, s); err != nil {
		return nil, err
	}
	varies := map[string]bool{}
	for _, a := range s.Axes {
		varies[a.Key] = true
	}
	s.cells, s.pos, s.Notes = nameCells(s.cells, s.pos, x.given, varies)
	return s, nil
}

// expansion is a decoded scenario on its way to cells: the generator
// kinds (the outermost axis) and their configs, the other axes, and the
// cells made so far.
type expansion struct {
	file, baseDir string
	doc           *document
	pos           schema.Pos
	s             *Scenario
	tu            *targetUse

	kinds   []string
	configs []workload.Config
	axes    []*schema.Axis
	listed  map[string][]string
	given   []map[string]string // per cell: the file's values of the axes it lists several of
}

// splitAxes takes the generator kind out of the decoded axes (each kind
// has its own sub-axes, generator.KIND.*) and notes the axes the file
// lists more than one value of.
func (x *expansion) splitAxes(decoded []*schema.Axis) {
	x.kinds = []string{x.doc.Generator.Kind}
	x.configs = []workload.Config{x.doc.Generator.Config}
	x.listed = map[string][]string{}
	for _, a := range decoded {
		x.listed[a.Key] = a.Values
		if len(a.Values) > 1 {
			x.s.Axes = append(x.s.Axes, Axis{Key: a.Key, Values: a.Values})
		}
		if a.Key == "generator" {
			x.kinds, x.configs = a.Values, nil
			for i := range a.Values {
				x.configs = append(x.configs, a.Value(i).(workload.Config))
			}
			continue
		}
		x.axes = append(x.axes, a)
	}
}

// scoped are the axes that apply to generator kind k.
func (x *expansion) scoped(k string) []*schema.Axis {
	var out []*schema.Axis
	for _, a := range x.axes {
		if a.Scope == "" || a.Scope == k {
			out = append(out, a)
		}
	}
	return out
}

// checkSize refuses a matrix of more than maxCells cells (with its
// kernels) before expanding it.
func (x *expansion) checkSize(root *yaml.Node) error {
	total := 0
	for _, k := range x.kinds {
		n := 1
		for _, a := range x.scoped(k) {
			n *= len(a.Values)
			if n > maxCells {
				break
			}
		}
		total += n
		if total*len(x.s.Kernels) > maxCells {
			return &Error{File: x.file, Line: root.Line, Col: root.Column, Msg: fmt.Sprintf("the matrix expands to more than %d cells; shorten some axis lists or split the scenario", maxCells)}
		}
	}
	return nil
}

// expandKind makes the cells of generator kind k (the gi-th): one per
// combination of its axes' values, the last axis fastest.
func (x *expansion) expandKind(gi int, k string) error {
	scoped := x.scoped(k)
	idx := make([]int, len(scoped))
	for {
		if err := x.addCell(gi, k, scoped, idx); err != nil {
			return err
		}
		// odometer, last axis fastest
		i := len(idx) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(scoped[i].Values) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return nil
		}
	}
}

// addCell makes the cell of kind k with the idx-th values of the scoped
// axes, resolves it and adds it with its positions and warnings.
func (x *expansion) addCell(gi int, k string, scoped []*schema.Axis, idx []int) error {
	s := x.s
	c := x.doc.Cell.clone()
	c.Scenario = s.Name
	c.Generator = Generator{Kind: k, Config: schema.Clone(x.configs[gi])}
	cpos := x.pos.Clone()
	fs := c.Fields()
	for i, a := range scoped {
		if err := schema.Set(fs, a.Key, a.Value(idx[i])); err != nil {
			panic(err) // the decoder recorded a key the cell does not have
		}
		cpos[a.Key] = a.ElemNode(idx[i])
	}
	ws, err := resolveCell(x.file, &c, cpos, x.listed, x.baseDir, x.tu)
	if err != nil {
		return err
	}
	for _, w := range ws {
		if !slices.Contains(s.Warnings, w) {
			s.Warnings = append(s.Warnings, w)
		}
	}
	c.Axes = axesOf(&c, fs) // fs reads the resolved values (bound to c's fields)
	g := map[string]string{"generator": k}
	for i, a := range scoped {
		if len(a.Values) > 1 {
			g[a.Key] = a.Values[idx[i]]
		}
	}
	s.cells = append(s.cells, c)
	s.pos = append(s.pos, cpos)
	x.given = append(x.given, g)
	return nil
}

// checkRuns refuses more than maxRuns runs (cells x kernels x
// repetitions).
func checkRuns(file string, pos schema.Pos, s *Scenario) error {
	runs := 0
	for _, c := range s.cells {
		runs += c.Repetitions * len(s.Kernels)
	}
	if runs > maxRuns {
		return pos.Errorf(file, "repetitions", "%d runs (cells x kernels x repetitions); at most %d: lower repetitions or shorten axis lists", runs, maxRuns)
	}
	return nil
}

var badNameChars = lazyre.New(`[^a-z0-9._-]+`)

func nameFromFile(filename string) string {
	base := strings.ToLower(filepath.Base(filename))
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
	base = strings.Trim(badNameChars().ReplaceAllString(base, "-"), "-._")
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

// resolve takes k's paths relative to baseDir (see rel).
func (k Kernel) resolve(baseDir string) Kernel {
	k.Image = rel(baseDir, k.Image)
	k.Modules = rel(baseDir, k.Modules)
	k.Tree = rel(baseDir, k.Tree)
	k.Config = rel(baseDir, k.Config)
	if k.Patches != nil {
		ps := make([]string, len(k.Patches))
		for i, p := range k.Patches {
			if _, ok := SeriesName(p); ok {
				ps[i] = p // a shipped series, no path
				continue
			}
			ps[i] = rel(baseDir, p)
		}
		k.Patches = ps
	}
	return k
}

// kernelProblem is what is wrong with a kernels[] entry: the offending key
// (relative to the entry) and the message, or "", "".
func kernelProblem(k Kernel) (key, msg string) {
	n := 0
	for _, v := range []string{k.Image, k.Debian, k.Tree, k.Source} {
		if v != "" {
			n++
		}
	}
	switch {
	case k.Label == "":
		return "", "label required, e.g. {label: stock} or {label: patched, image: /path/bzImage}"
	case n > 1 && k.Source != "":
		return "source", "give one of image, debian, tree or source"
	case n > 1 && k.Tree != "":
		return "tree", "give one of image, debian or tree"
	case n > 1:
		return "debian", "give image or debian, not both"
	case k.Modules != "" && k.Image == "":
		return "modules", "modules belong to an image; add image: or drop modules:"
	case k.Tree == "" && k.Ref != "":
		return "ref", "ref belongs to a source tree; add tree: or drop ref:"
	case !k.Builds() && len(k.Patches) > 0:
		return "patches", "patches belong to a source tree; add tree: or source: (e.g. source: debian:6.1), or drop patches:"
	case !k.Builds() && k.Config != "":
		return "config", "config belongs to a source tree; add tree: or source: (e.g. source: debian:6.1), or drop config:"
	case k.Build != "" && !k.Builds():
		return "build", "build belongs to a kernel built from source; add source: (e.g. source: debian:6.1) or drop build:"
	case k.Build == BuildModules && k.Source == "":
		return "build", "build: modules rebuilds modules of Debian's packaged kernel and needs source: debian:VERSION, not tree:"
	case k.Build == BuildModules && k.Config != "":
		return "build", "build: modules uses Debian's config; drop config: or use build: full"
	}
	return "", ""
}

func checkKernels(file string, pos schema.Pos, doc *document) error {
	seen := map[string]int{}
	for i, k := range doc.Kernels {
		p := fmt.Sprintf("kernels[%d]", i)
		if key, msg := kernelProblem(k); msg != "" {
			at := p
			if key != "" {
				at += "." + key
			}
			return pos.Errorf(file, at, "%s: %s", p, msg)
		}
		if j, dup := seen[k.Label]; dup {
			return pos.Errorf(file, p+".label", "kernel label %q is used twice (kernels[%d] and kernels[%d]); labels name table columns and must differ", k.Label, j, i)
		}
		seen[k.Label] = i
	}
	gk := doc.Guest.Kernel
	switch {
	case gk.Label != "":
		return pos.Errorf(file, "guest.kernel.label", "guest.kernel.label is not used (the guest kernel is not a compared column); remove it")
	case gk.Image != "" && gk.Debian != "":
		return pos.Errorf(file, "guest.kernel.debian", "guest.kernel: give image or debian, not both")
	case gk.Modules != "" && gk.Image == "":
		return pos.Errorf(file, "guest.kernel.modules", "guest.kernel: modules belong to an image; add image: or drop modules:")
	}
	return nil
}

// targetUse tracks whether each explicitly named perf target applies to
// at least one cell.
type targetUse struct {
	pos  schema.Pos
	used map[string]bool // path of the list element -> used
}

func newTargetUse(pos schema.Pos) *targetUse { return &targetUse{pos: pos, used: map[string]bool{}} }

func (t *targetUse) check(file string) error {
	for _, list := range []string{"perf.stat.targets", "perf.record.targets"} {
		for i := 0; ; i++ {
			p := fmt.Sprintf("%s[%d]", list, i)
			n := t.pos[p]
			if n == nil {
				break
			}
			if n.Line > 0 && n.Value != TargetGenerator && !t.used[p] { // defaults (Line 0) may not apply
				why := "it needs backend tap+vhost"
				for _, w := range workload.All() {
					if workload.Target(w) == n.Value {
						why = "it needs a " + w.Name() + " generator"
					}
				}
				return t.pos.Errorf(file, p, "%s: target %s applies to no cell (%s); remove it", list, n.Value, why)
			}
		}
	}
	return nil
}

// resolveTargets replaces "generator" by the cell's generator target and
// drops targets the cell does not have.
func resolveTargets(c *Cell, list []string, path string, tu *targetUse) []string {
	gen := workload.Target(c.Generator.Workload())
	var out []string
	for i, t := range list {
		ok := true
		switch t {
		case TargetGenerator:
			t = gen
		case TargetVhost:
			ok = c.Backend == BackendVhost
		case TargetVCPU, TargetQEMU:
		default: // a workload's threads
			ok = t == gen
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

// resolveCell fills computed defaults and checks rules that span fields;
// the workload resolves its own section. It returns the cell's warnings.
func resolveCell(file string, c *Cell, pos schema.Pos, listed map[string][]string, baseDir string, tu *targetUse) ([]string, error) {
	errAt := func(path, format string, a ...any) error { return pos.Errorf(file, path, format, a...) }
	c.Guest.Kernel.Image = rel(baseDir, c.Guest.Kernel.Image)
	c.Guest.Kernel.Modules = rel(baseDir, c.Guest.Kernel.Modules)
	if c.Backend == BackendTap {
		c.Pin.Vhost = nil // no vhost worker on a plain tap
	}
	cfg := c.Generator.Config
	r := workload.NewResolver(file, "generator."+c.Generator.Kind, pos, listed, func(p string) string { return rel(baseDir, p) },
		workload.Cell{Backend: c.Backend, Queues: c.Queues, Qdisc: c.Qdisc, PinGenerator: c.Pin.Generator})
	if err := cfg.Resolve(r); err != nil {
		return nil, err
	}
	genDur, known := cfg.Length()
	if c.Queues == 0 {
		c.Queues = 1
		if q, ok := cfg.(workload.Queuer); ok {
			c.Queues = max(q.AutoQueues(), 1)
		}
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
	if c.Latency != nil {
		if err := c.Latency.check(file, pos); err != nil {
			return nil, err
		}
	}
	t := &c.Timeouts
	if t.Traffic == 0 {
		if !known {
			t.Traffic = 10 * time.Minute
		} else {
			t.Traffic = c.Warmup + genDur + time.Minute
		}
	}
	if t.Cell == 0 {
		t.Cell = t.Boot + t.Setup + t.Traffic + t.Teardown
		if l := c.Latency; l != nil {
			t.Cell += l.Idle + l.Timeout
		}
	}
	for _, ph := range []struct {
		name string
		d    time.Duration
	}{{"boot", t.Boot}, {"setup", t.Setup}, {"traffic", t.Traffic}, {"teardown", t.Teardown}} {
		if ph.d == 0 {
			return nil, errAt("timeouts."+ph.name, "timeouts.%s must be above 0", ph.name)
		}
	}
	if known && genDur > 0 && t.Traffic < c.Warmup+genDur {
		return nil, errAt("timeouts.traffic", "timeouts.traffic %s is shorter than warmup + generator duration (%s); raise it or leave it unset", schema.FormatDuration(t.Traffic), schema.FormatDuration(c.Warmup+genDur))
	}
	return r.Warnings(), nil
}

// axesOf maps every axis key that applies to c to its canonical value;
// fs are c's Fields.
func axesOf(c *Cell, fs []schema.Field) map[string]string {
	m := map[string]string{"generator": c.Generator.Kind}
	schema.Leaves(fs, func(path string, info *schema.Info, value string) {
		if !info.Axis || path == "pin.vhost" && c.Backend != BackendVhost {
			return
		}
		m[path] = value
	})
	return m
}

// nameCells names every cell and drops duplicates: cells that differ
// only in an axis that does not apply to them (pin.vhost on a plain tap,
// which has no vhost worker: dropped silently, as documented) or in axis
// values that resolve to the same cell (queues auto and 1 for one thread:
// a note names them). given holds each cell's file values of the axes
// listed with several values. Names: backend/generator[/qdisc] then one
// part per other axis that the file lists with several values; pins also
// appear whenever set.
func nameCells(cells []Cell, pos []schema.Pos, given []map[string]string, varies map[string]bool) ([]Cell, []schema.Pos, []string) {
	rows := schema.Rows(new(Cell).Fields())
	var out []Cell
	var outPos []schema.Pos
	var notes []string
	seen := map[string]int{}      // name -> index in cells of the cell kept
	same := map[string][]string{} // axes diff -> cells it collapses
	var diffs []string
	for i, c := range cells {
		parts := []string{c.Backend}
		gen, says := c.Generator.Config.NamePart()
		parts = append(parts, gen)
		if c.Qdisc != "" {
			parts = append(parts, c.Qdisc)
		} else if varies["qdisc"] {
			parts = append(parts, "qdisc-default")
		}
		prefix := "generator." + c.Generator.Kind + "."
		for _, r := range rows {
			k := r.Path
			v, ok := c.Axes[k]
			if !r.Info.Axis || r.Info.Section != "" || !ok || k == "backend" || k == "qdisc" {
				continue
			}
			if key, mine := strings.CutPrefix(k, prefix); mine && slices.Contains(says, key) {
				continue
			}
			if strings.HasPrefix(k, "pin.") {
				if v != "none" || varies[k] {
					parts = append(parts, r.Info.NamePart(v))
				}
				continue
			}
			if varies[k] {
				parts = append(parts, r.Info.NamePart(v))
			}
		}
		c.Name = strings.Join(parts, "/")
		if j, dup := seen[c.Name]; dup {
			if d := sameCellDiff(c, given[j], given[i]); d != "" {
				if _, ok := same[d]; !ok {
					diffs = append(diffs, d)
				}
				if !slices.Contains(same[d], c.Name) {
					same[d] = append(same[d], c.Name)
				}
			}
			continue
		}
		seen[c.Name] = i
		out = append(out, c)
		outPos = append(outPos, pos[i])
	}
	for _, d := range diffs {
		cells := same[d]
		if len(cells) == 1 {
			notes = append(notes, fmt.Sprintf("%s resolve to the same cell, %s: it runs once", d, cells[0]))
			continue
		}
		notes = append(notes, fmt.Sprintf("%s resolve to the same cells (%s): each runs once", d, strings.Join(cells, ", ")))
	}
	return out, outPos, notes
}

// sameCellDiff names the axes in which two combinations of the file's
// axis values (kept, dropped) that resolve to cell c differ ("queues 1
// and auto"); "" when the only difference is pin.vhost on a plain tap.
func sameCellDiff(c Cell, kept, dropped map[string]string) string {
	var diff []string
	for _, k := range sortedKeys(kept) {
		if kept[k] == dropped[k] || k == "pin.vhost" && c.Backend != BackendVhost {
			continue
		}
		diff = append(diff, fmt.Sprintf("%s %s and %s", k, kept[k], dropped[k]))
	}
	return strings.Join(diff, "; ")
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
