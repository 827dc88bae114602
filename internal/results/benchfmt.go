package results

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"golang.org/x/perf/benchfmt"
)

// loadBenchfmt reads a Go benchmark format file. Each result line becomes a
// sample: the name's "/key=value" parts become axes (the cell name is the
// values joined by "/"), the units become metric keys, the "kernel" name
// part or configuration key the kernel label (else the file name), and
// "accel: tcg" or "emulated: true" marks it emulated.
func (set *Set) loadBenchfmt(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("load %s: %w", path, err)
	}
	defer f.Close()
	return set.readBenchfmt(f, path)
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
		return fmt.Errorf("load %s: %w", path, err)
	}
	if n == 0 {
		return fault.Input("%s holds no benchmark results; pass a run directory or a Go benchmark format file", path)
	}
	return nil
}

func sampleFromResult(rec *benchfmt.Result, fileLabel string) (Sample, error) {
	s := Sample{Schema: SchemaVersion, Axes: map[string]string{}, Metrics: map[string]float64{}, Labels: map[string]string{}}
	base, parts := rec.Name.Parts()
	var cell []string
	for _, p := range parts {
		if p[0] == '-' { // GOMAXPROCS suffix
			continue
		}
		p = bytes.TrimPrefix(p, []byte("/"))
		if len(p) == 0 {
			file, line := rec.Pos()
			return s, fault.Input("%s:%d: benchmark name Benchmark%s has an empty /part (go test never writes one); remove the extra /", file, line, rec.Name.Full())
		}
		k, v, ok := bytes.Cut(p, []byte("="))
		if !ok {
			cell = append(cell, string(p))
			continue
		}
		if string(k) == "kernel" {
			s.Kernel = string(v)
			continue
		}
		s.Axes[string(k)] = string(v)
		cell = append(cell, string(v))
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
		}
	}
	if s.Kernel == "" {
		s.Kernel = fileLabel
	}
	for _, v := range rec.Values {
		unit, val := v.Unit, v.Value
		if v.OrigUnit != "" {
			unit, val = v.OrigUnit, v.OrigValue
		}
		s.Metrics[unit] = val
	}
	return s, nil
}

// WriteBenchfmt writes the samples of set in the Go benchmark format, one
// line per sample, metric keys as units, so benchstat reads them:
//
//	kernel: stock
//	BenchmarkVnetbench/backend=tap/generator=pktgen-t1 1 452000 tx_pps 1154000 lost_pps
//
// Axes become "/axis=value" name parts in the order of the cell name; the
// kernel label is a configuration line ("benchstat -col kernel" compares
// kernels from one file). Emulated samples carry "accel: tcg"; where some
// samples are nested (lab kernels) every sample says "nested: true|false".
func WriteBenchfmt(w io.Writer, set *Set) error {
	var b bytes.Buffer
	keys := set.MetricKeys()
	// Unit metadata: tell benchstat the direction and that the values are
	// not normally distributed.
	fmt.Fprintf(&b, "# vnetbench results; read with: benchstat -col kernel FILE\n")
	for _, k := range keys {
		m := Describe(k)
		switch m.Better {
		case HigherIsBetter:
			fmt.Fprintf(&b, "Unit %s better=higher assume=nothing\n", k)
		case LowerIsBetter:
			fmt.Fprintf(&b, "Unit %s better=lower assume=nothing\n", k)
		default:
			fmt.Fprintf(&b, "Unit %s assume=nothing\n", k)
		}
	}
	cfg := map[string]string{}
	setCfg := func(k, v string) {
		if cfg[k] != v {
			cfg[k] = v
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
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
			accel := "kvm"
			if env := set.Env[kernel]; env != nil && env.Accel != "" {
				accel = env.Accel
			}
			if s.Emulated {
				accel = "tcg"
			}
			setCfg("accel", accel)
			if nested {
				setCfg("nested", strconv.FormatBool(s.Nested))
			}
			if env := set.Env[kernel]; env != nil && env.CPUModel != "" {
				setCfg("cpu", env.CPUModel)
			}
			fmt.Fprintf(&b, "%s 1", benchName(s))
			for _, k := range keys {
				if v, ok := s.Value(k); ok {
					fmt.Fprintf(&b, " %s %s", strconv.FormatFloat(v, 'g', -1, 64), k)
				}
			}
			b.WriteString("\n")
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// benchName is "Benchmark<Scenario>/axis=value/..." with axes in the order
// their values appear in the cell name.
func benchName(s *Sample) string {
	base := "Vnetbench"
	if sc := s.Labels["benchmark"]; sc != "" {
		base = strings.TrimPrefix(sc, "Benchmark")
	}
	clean := strings.NewReplacer("/", "_", " ", "_", "=", "_").Replace
	var parts []string
	used := map[string]bool{}
	axes := slices.Sorted(maps.Keys(s.Axes))
	for _, v := range strings.Split(s.Cell, "/") {
		for _, k := range axes {
			if !used[k] && s.Axes[k] == v {
				used[k] = true
				parts = append(parts, clean(k)+"="+clean(v))
				break
			}
		}
	}
	rest := []string{}
	for k := range s.Axes {
		if !used[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		parts = append(parts, clean(k)+"="+clean(s.Axes[k]))
	}
	if len(s.Axes) == 0 {
		for _, v := range strings.Split(s.Cell, "/") {
			parts = append(parts, clean(v))
		}
	}
	return "Benchmark" + base + "/" + strings.Join(parts, "/")
}
