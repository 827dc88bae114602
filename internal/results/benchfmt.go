package results

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"golang.org/x/perf/benchfmt"
)

// loadBenchfmt reads a Go benchmark format file. Each result line becomes a
// sample: the name's "/key=value" parts become axes (the cell name is the
// values joined by "/"; a pin WriteBenchfmt wrote, "vhost=0", is axis
// pin.vhost with the cell name part vhost-pin0, as the run had it), the units become metric keys, the "kernel" name
// part or configuration key the kernel label (else the file name), and
// "accel: tcg" or "emulated: true" marks it emulated.
func (set *Set) loadBenchfmt(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return unreadable(path, err)
	}
	defer f.Close()
	return set.readBenchfmt(safefs.Reader(f, safefs.MaxResults, path), path)
}

// readBenchfmt is loadBenchfmt on a reader; path names it in errors and
// gives the kernel label a file without one gets.
func (set *Set) readBenchfmt(in io.Reader, path string) error {
	r := benchfmt.NewReader(in, path)
	reps := map[[2]string]int{}
	n := 0
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			return fault.Input("%v; fix the line or remove it", rec)
		case *benchfmt.Result:
			s, err := sampleFromResult(rec, dirLabel(path))
			if err != nil {
				return err
			}
			k := [2]string{s.Cell, s.Kernel}
			s.Rep = reps[k]
			reps[k]++
			env := &Env{Accel: rec.GetConfig("accel"), CPUModel: rec.GetConfig("cpu"), KernelRelease: rec.GetConfig("kernel_release")}
			if env.Emulated() {
				s.Emulated = true
			}
			if err := set.addEnv(s.Kernel, env, path); err != nil {
				return err
			}
			set.Samples = append(set.Samples, s)
			n++
		}
	}
	if err := r.Err(); err != nil {
		return unreadable(path, err)
	}
	if n == 0 {
		return fault.Input("%s holds no benchmark results; pass a run directory or a Go benchmark format file", path)
	}
	return nil
}

func sampleFromResult(rec *benchfmt.Result, fileLabel string) (Sample, error) {
	s := Sample{Schema: SchemaVersion, Axes: map[string]string{}, Metrics: map[metric.Key]float64{}, Labels: map[string]string{}}
	base, parts := rec.Name.Parts()
	cell, err := readNameParts(&s, rec, parts)
	if err != nil {
		return s, err
	}
	s.Cell = strings.Join(cell, "/")
	if s.Cell == "" {
		s.Cell = string(base)
	}
	if s.Cell == "" {
		file, line := rec.Pos()
		return s, fault.Input("%s:%d: benchmark without a name (a line starting with a bare Benchmark); name it, as in BenchmarkTx", file, line)
	}
	s.Labels["benchmark"] = string(base)
	for _, c := range rec.Config {
		if !c.File {
			continue
		}
		switch c.Key {
		case "kernel":
			if s.Kernel == "" {
				s.Kernel = string(c.Value)
			}
		case "emulated":
			s.Emulated, _ = strconv.ParseBool(string(c.Value))
		case "nested":
			s.Nested, _ = strconv.ParseBool(string(c.Value))
		case "window_s":
			s.WindowS, _ = strconv.ParseFloat(string(c.Value), 64)
		default:
			s.Labels[c.Key] = string(c.Value)
			if benchAxis(c.Key) {
				// An axis every sample of the file shared (WriteBenchfmt):
				// the tables' row labels and headers read it.
				if _, ok := s.Axes[c.Key]; !ok {
					s.Axes[c.Key] = string(c.Value)
				}
			}
		}
	}
	if s.Kernel == "" {
		s.Kernel, s.KernelFromName = fileLabel, true
	}
	for _, v := range rec.Values {
		unit, val := v.Unit, v.Value
		if v.OrigUnit != "" {
			unit, val = v.OrigUnit, v.OrigValue
		}
		s.Metrics[metric.Key(unit)] = val
	}
	return s, nil
}

// readNameParts reads a result name's /parts into s: kernel=, pin and
// other key=value parts set s.Kernel and s.Axes. It returns the parts of
// the sample's cell name.
func readNameParts(s *Sample, rec *benchfmt.Result, parts [][]byte) (cell []string, err error) {
	prev := "" // the plain part before p, if p directly follows one
	for _, p := range nameParts(parts) {
		if p == "" {
			file, line := rec.Pos()
			return nil, fault.Input("%s:%d: benchmark name Benchmark%s has an empty /part (go test never writes one); remove the extra /", file, line, rec.Name.Full())
		}
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			cell = append(cell, p)
			prev = p
			continue
		}
		if k == "kernel" {
			s.Kernel = v
			continue
		}
		if a := pinAxis(k, v); a != "" {
			// "vhost=0" is pin.vhost, its cell name part "vhost-pin0",
			// which a name may spell just before it.
			s.Axes[a] = v
			if part := pinPart(a, v); part != prev {
				cell = append(cell, part)
			}
			prev = ""
			continue
		}
		s.Axes[k] = v
		if !spells(prev, k, v) {
			// A key a generator's part spells ("pktgen-t4/threads=4")
			// is an axis only: the cell name is what it was before
			// WriteBenchfmt wrote the key.
			cell = append(cell, v)
			prev = ""
		}
	}
	return cell, nil
}

// nameParts are a result name's /parts without their "/", its GOMAXPROCS
// suffix left out, except where the suffix ends a pin's CPU range:
// benchfmt reads a name ending "vhost=0-1" as "vhost=0" and suffix "-1".
func nameParts(parts [][]byte) []string {
	var out []string
	for _, p := range parts {
		if p[0] != '-' {
			out = append(out, string(bytes.TrimPrefix(p, []byte("/"))))
			continue
		}
		if n := len(out); n > 0 {
			if k, v, ok := strings.Cut(out[n-1], "="); ok && pinAxis(k, v+string(p)) != "" {
				out[n-1] += string(p)
			}
		}
	}
	return out
}

// pinStems are the pin axes and the stems of their cell name parts
// ("vhost-pin0", "gen-unpinned", as the scenario's pin keys name them).
var pinStems = map[string]string{"pin.vhost": "vhost", "pin.vcpu": "vcpu", "pin.generator": "gen"}

// cpuList is a pin's value: CPUs ("0", "0-1", "2,4") or none.
var cpuList = lazyre.New(`^(none|[0-9]+([-,][0-9]+)*)$`)

// pinAxis is the pin axis a name's key=value stands for, or "": key is
// the axis (pin.vhost) or the short name WriteBenchfmt gives it (vhost),
// value a CPU list or none (a "vhost=on" of another tool is no pin).
func pinAxis(key, value string) string {
	a := key
	if _, ok := pinStems["pin."+key]; ok && key != "generator" { // the plain generator axis keeps that name
		a = "pin." + key
	}
	if _, ok := pinStems[a]; !ok || !cpuList().MatchString(value) {
		return ""
	}
	return a
}

// pinPart is pin axis a's cell name part for value v: "vhost-pin0",
// "vhost-unpinned" for none. It spells what schema.PinPart spells for
// the scenario's cells (TestPinPartIsTheScenarios), without the results
// store depending on the scenario's schema.
func pinPart(a, v string) string {
	if v == "none" {
		return pinStems[a] + "-unpinned"
	}
	return pinStems[a] + "-pin" + v
}

// WriteBenchfmt writes the samples of set in the Go benchmark format, one
// line per sample, metric keys as units, so benchstat reads them:
//
//	backend: tap
//	kernel: stock
//	BenchmarkVnetbench/pktgen-t1/qdisc=fq_codel 1 452000 tx_pps 1154000 lost_pps
//
// A name holds only what tells the cells apart: the parts of the cell name
// in their order, an axis's as axis=value (a generator's "pktgen-t4"
// followed by "threads=4" where its threads vary), minus the axes whose
// value is the same in every sample, then the axes that vary but the cell name
// does not spell (pktgen's mode, which its thread count picks), as
// axis=value; a part spelling an axis that some samples lack is axis=value
// too ("vhost=0" for "vhost-pin0": tap cells have no pin.vhost), so that
// benchstat can ignore it and pair the cells that differ by it; the
// constant axes are file-level "axis: value" lines, so
// benchstat's tables stay as wide as the runs differ. An axis only some
// samples have, with one value wherever present (pktgen's burst beside an
// AF_XDP cell), is in neither: its cells' other parts tell them apart. The kernel label is a
// configuration line ("benchstat -col kernel" compares kernels from one
// file). Emulated samples carry "accel: tcg"; where some samples are
// nested (lab kernels) every sample says "nested: true|false". A sample
// with no measurement (an n/a cell) is a comment line with its reason: a
// result line needs at least one value.
func WriteBenchfmt(w io.Writer, set *Set) error {
	var b bytes.Buffer
	keys := set.MetricKeys()
	// Unit metadata: tell benchstat the direction and that the values are
	// not normally distributed.
	fmt.Fprintf(&b, "# vnetbench results; read with: benchstat -col kernel FILE\n")
	for _, k := range keys {
		m := Describe(k)
		switch m.Better {
		case metric.HigherIsBetter:
			fmt.Fprintf(&b, "Unit %s better=higher assume=nothing\n", token(string(k)))
		case metric.LowerIsBetter:
			fmt.Fprintf(&b, "Unit %s better=lower assume=nothing\n", token(string(k)))
		default:
			fmt.Fprintf(&b, "Unit %s assume=nothing\n", token(string(k)))
		}
	}
	names := newBenchNamer(set.Samples)
	cfg := map[string]string{}
	setCfg := func(k, v string) {
		if cfg[k] != v {
			cfg[k] = v
			fmt.Fprintf(&b, "%s: %s\n", k, configValue(v))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(names.constant)) {
		setCfg(configKey(k), names.constant[k])
	}
	nested := set.Nested("")
	for _, kernel := range set.Kernels() {
		for i := range set.Samples {
			s := &set.Samples[i]
			if s.Kernel != kernel {
				continue
			}
			b.WriteString("\n")
			setCfg("kernel", kernel)
			setCfg("accel", sampleAccel(set, s))
			if nested {
				setCfg("nested", strconv.FormatBool(s.Nested))
			}
			if env := set.Env[kernel]; env != nil && env.CPUModel != "" {
				setCfg("cpu", env.CPUModel)
			}
			writeResult(&b, names.name(s), s, keys)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// sampleAccel is the accelerator s ran under: tcg when emulated, else its
// kernel's recorded one, else kvm.
func sampleAccel(set *Set, s *Sample) string {
	if s.Emulated {
		return "tcg"
	}
	if env := set.Env[s.Kernel]; env != nil && env.Accel != "" {
		return env.Accel
	}
	return "kvm"
}

// writeResult writes s's result line, or a comment when it has no value.
func writeResult(b *bytes.Buffer, name string, s *Sample, keys []metric.Key) {
	var vals []string
	for _, k := range keys {
		if v, ok := s.Value(k); ok {
			vals = append(vals, strconv.FormatFloat(v, 'g', -1, 64)+" "+token(string(k)))
		}
	}
	if len(vals) == 0 {
		why := s.Unsupported
		if why == "" {
			why = "no measurement"
		}
		fmt.Fprintf(b, "# %s rep %d: n/a: %s\n", name, s.Rep+1, configValue(why))
		return
	}
	fmt.Fprintf(b, "%s 1 %s\n", name, strings.Join(vals, " "))
}

// configValue keeps a configuration value (or comment) on its line.
func configValue(v string) string {
	return strings.Map(func(r rune) rune {
		if unsafeText(r) {
			return ' '
		}
		return r
	}, v)
}

// unsafeText reports whether r may not appear in a benchfmt line: a
// control character (a line break would start a line of its own: a forged
// configuration or result), or a line or paragraph separator.
func unsafeText(r rune) bool {
	return r < 0x20 || r >= 0x7f && r <= 0x9f || r == 0x2028 || r == 0x2029
}

// token is s as one benchfmt token (a benchmark name part, a unit, a
// configuration key): white space and control characters become "_".
func token(s string) string {
	return strings.Map(func(r rune) rune {
		if unsafeText(r) || unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, s)
}

// configKey is axis name k as a configuration key, which benchfmt wants
// without spaces or colons and not named like the keys WriteBenchfmt
// writes itself.
func configKey(k string) string {
	k = token(strings.NewReplacer(":", "_").Replace(k))
	switch k {
	case "kernel", "accel", "nested", "cpu", "emulated", "window_s":
		return "axis." + k
	}
	return k
}

// benchNamer names samples by what tells their cells apart.
type benchNamer struct {
	// constant holds the axes whose value every sample shares.
	constant map[string]string
	// short is the name an axis goes by in benchmark names: the last
	// part of a dotted key (generator.pktgen.mode: mode) where no other
	// axis ends the same.
	short map[string]string
	// varying holds the axes that take two values or more among the
	// samples that have them; partial those that some samples lack.
	varying, partial map[string]bool
}

func newBenchNamer(samples []Sample) benchNamer {
	n := benchNamer{constant: map[string]string{}, short: shortAxisNames(samples), varying: map[string]bool{}, partial: map[string]bool{}}
	seen, first := map[string]int{}, map[string]string{}
	for i := range samples {
		for k, v := range samples[i].Axes {
			if i == 0 || (seen[k] == i && n.constant[k] == v) {
				n.constant[k] = v
				seen[k] = i + 1
			}
			if f, ok := first[k]; !ok {
				first[k] = v
			} else if f != v {
				n.varying[k] = true
			}
		}
	}
	for k, v := range n.constant {
		if seen[k] != len(samples) || v == "" || !validKey(k) {
			delete(n.constant, k)
		}
	}
	for i := range samples {
		for k := range first {
			if _, ok := samples[i].Axes[k]; !ok {
				n.partial[k] = true
			}
		}
	}
	// Values match axes by value: should two cells come out with one
	// name, leave every axis in the names.
	cells := map[string]string{}
	for i := range samples {
		name := n.name(&samples[i])
		if c, ok := cells[name]; ok && c != samples[i].Cell {
			return benchNamer{constant: map[string]string{}, short: map[string]string{}, varying: n.varying, partial: n.partial}
		}
		cells[name] = samples[i].Cell
	}
	return n
}

// shortAxisNames maps each dotted axis of samples to its shortest
// trailing part that no other axis of the same sample ends with, nor any
// undotted axis is (generator.pktgen.threads: threads, beside
// generator.afxdp.threads, which no pktgen sample has: benchstat -col
// /threads lines both up, the generator part tells them apart).
func shortAxisNames(samples []Sample) map[string]string {
	short := map[string]string{}
	clash := map[string]bool{}
	var plain []string
	for i := range samples {
		for k := range samples[i].Axes {
			if !strings.Contains(k, ".") && !slices.Contains(plain, k) {
				plain = append(plain, k)
			}
		}
	}
	for i := range samples {
		for k := range samples[i].Axes {
			parts := strings.Split(k, ".")
			for j := len(parts) - 1; j > 0; j-- {
				suffix := strings.Join(parts[j:], ".")
				if !slices.Contains(plain, suffix) && !hasOther(samples[i].Axes, k, suffix) {
					if s, ok := short[k]; ok && s != suffix {
						clash[k] = true
					}
					short[k] = suffix
					break
				}
			}
		}
	}
	for k := range clash {
		delete(short, k)
	}
	// Two axes under one short name in no sample still must not share it
	// where their samples' names would read alike: keep them apart unless
	// they are generator sub-keys, which the generator part separates.
	by := map[string][]string{}
	for k, s := range short {
		by[s] = append(by[s], k)
	}
	for _, ks := range by {
		if len(ks) > 1 && slices.ContainsFunc(ks, func(k string) bool { return !strings.HasPrefix(k, "generator.") }) {
			for _, k := range ks {
				delete(short, k)
			}
		}
	}
	return short
}

// hasOther reports whether axes holds an axis other than k that is
// suffix or ends with "."+suffix.
func hasOther(axes map[string]string, k, suffix string) bool {
	for o := range axes {
		if o != k && (o == suffix || strings.HasSuffix(o, "."+suffix)) {
			return true
		}
	}
	return false
}

// validKey reports whether axis k can start a configuration key (a
// lower-case letter).
func validKey(k string) bool {
	return k != "" && k[0] >= 'a' && k[0] <= 'z'
}

// name is "Benchmark<Scenario>/part/...": the parts of s's cell name, an
// axis's as axis=value, leaving out the axes in n.constant.
func (n benchNamer) name(s *Sample) string {
	base := "Vnetbench"
	if sc := s.Labels["benchmark"]; sc != "" {
		base = token(strings.NewReplacer("/", "_").Replace(strings.TrimPrefix(sc, "Benchmark")))
	}
	clean := func(s string) string { return token(strings.NewReplacer("/", "_", "=", "_").Replace(s)) }
	var parts []string
	used := map[string]bool{}
	axes := slices.Sorted(maps.Keys(s.Axes))
	for _, v := range strings.Split(s.Cell, "/") {
		k := ""
		for _, a := range axes {
			if !used[a] && s.Axes[a] == v {
				k = a
				break
			}
		}
		if gen := generatorSpells(v, s.Axes); k == "" && len(gen) > 0 {
			// "pktgen-t4" stays (a name read back keeps the cell name
			// older files gave), followed by threads=4 where the
			// threads vary: benchstat addresses a part by its key only
			// (-col /threads), never a positional one.
			parts = append(parts, clean(v))
			for _, a := range gen {
				used[a] = true
				if a != "generator" && n.varying[a] {
					parts = append(parts, clean(n.shortName(a))+"="+clean(s.Axes[a]))
				}
			}
			continue
		}
		if k == "" {
			if k = n.spelledPartial(v, s.Axes, used); k != "" {
				v = s.Axes[k]
			}
		}
		switch {
		case k == "":
			parts = append(parts, clean(v))
		case n.constant[k] == v:
			used[k] = true
		default:
			used[k] = true
			parts = append(parts, clean(n.shortName(k))+"="+clean(v))
		}
	}
	for _, k := range axes {
		// An axis the cell name does not spell (pktgen's mode, beside
		// "pktgen-t4") would otherwise be lost where it varies.
		if v := s.Axes[k]; !used[k] && v != "" && n.varying[k] {
			parts = append(parts, clean(n.shortName(k))+"="+clean(v))
		}
	}
	if len(parts) == 0 {
		return "Benchmark" + base
	}
	return "Benchmark" + base + "/" + strings.Join(parts, "/")
}

// shortName is the name axis k goes by in benchmark names.
func (n benchNamer) shortName(k string) string {
	if sk, ok := n.short[k]; ok {
		return sk
	}
	return k
}

// spelledPartial is the one axis of axes, not yet used, that some
// samples lack and that cell name part p spells, or "": p is a stem of
// the key's last part and the value ("vhost-pin0": pin.vhost 0, which
// only tap+vhost cells have; "q4", "pkt1500"). Such a part,
// left as it is, is in only some names, and benchstat, which addresses
// a part by its key, could neither ignore it nor group by it: with
// -col /backend a tap cell and its tap+vhost twin never met in one row.
// As axis=value ("vhost=0"), -ignore /vhost pairs them. (Where every
// sample has the axis, a plain "q4" is followed by "queues=4", as an
// axis that varies but no part names.)
func (n benchNamer) spelledPartial(p string, axes map[string]string, used map[string]bool) string {
	found := ""
	for a, v := range axes {
		if used[a] || !n.partial[a] {
			continue
		}
		if v == "none" {
			v = "unpinned" // pinPart's "vhost-unpinned"
		}
		rest, ok := strings.CutSuffix(p, v)
		stem := strings.TrimSuffix(strings.TrimSuffix(rest, "-pin"), "-")
		last := a[strings.LastIndexByte(a, '.')+1:]
		if !ok || v == "" || stem == "" || !strings.HasPrefix(last, stem) && !strings.HasPrefix(stem, last) {
			continue
		}
		if found != "" {
			return "" // two could: leave the part as it is
		}
		found = a
	}
	return found
}

// spells reports whether generator part p ("pktgen-t4") spells axis k
// (threads, pktgen.threads) with value v: p ends in "-" + k's last part's
// first letter + v.
func spells(p, k, v string) bool {
	last := k[strings.LastIndexByte(k, '.')+1:]
	return p != "" && last != "" && v != "" && strings.HasSuffix(p, "-"+last[:1]+v)
}

// generatorSpells is the axes that cell name part p spells as a
// generator's name part, "<generator>-<first letter of a key><value>"
// (pktgen-t4: generator pktgen, generator.pktgen.threads 4; iperf3-p2,
// tcp_rr-s64): a name need not say them again.
func generatorSpells(p string, axes map[string]string) []string {
	g := axes["generator"]
	rest, ok := strings.CutPrefix(p, g+"-")
	if g == "" || !ok || rest == "" {
		return nil
	}
	spelled := []string{"generator"}
	pre := "generator." + g + "."
	for k, v := range axes {
		if key, ok := strings.CutPrefix(k, pre); ok && key != "" && rest == key[:1]+v {
			spelled = append(spelled, k)
		}
	}
	return spelled
}

// benchAxis reports whether a file-level configuration key is one of the
// scenario axes WriteBenchfmt writes as "axis: value" (backend: tap,
// generator.pktgen.pkt_size: 60), not another tool's (goos, pkg).
func benchAxis(k string) bool {
	switch k {
	case "backend", "queues", "qdisc", "txqueuelen", "generator":
		return true
	}
	for _, p := range []string{"generator.", "guest.", "pin.", "latency."} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}
