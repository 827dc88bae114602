package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// SchemaVersion is the version of the results.jsonl record written by this
// package. Readers accept records with schema 1..SchemaVersion.
const SchemaVersion = 1

// File names inside a run directory.
const (
	ResultsFile   = "results.jsonl"
	EnvFile       = "env.json"
	ArtifactsDir  = "artifacts"
	ReproduceFile = "reproduce.sh"
)

// Sample is one repetition of one cell on one kernel: one line of
// results.jsonl. Metric keys are those of the Metrics registry (see Lookup).
type Sample struct {
	Schema  int                `json:"schema"`
	Run     string             `json:"run"`
	Cell    string             `json:"cell"`
	Rep     int                `json:"rep"`
	Kernel  string             `json:"kernel"`
	Axes    map[string]string  `json:"axes"`
	Start   time.Time          `json:"start"`
	WindowS float64            `json:"window_s"`
	Metrics map[string]float64 `json:"metrics"`
	// Threads holds per-generator-thread numbers; Metrics["tx_pps"] is the
	// total over threads.
	Threads []ThreadSample `json:"threads,omitempty"`
	// Labels are free-form facts about the sample: "target" names the perf
	// target of unqualified perf.<event> metrics; "cpu_model", "count",
	// "duration", "threads", "pin", "qdisc", "pkt_size" feed table headers.
	Labels    map[string]string `json:"labels,omitempty"`
	Warnings  []string          `json:"warnings,omitempty"`
	Artifacts []string          `json:"artifacts,omitempty"`
	// Symbols is the top of `perf report` for this sample (see Symbol).
	Symbols  []Symbol `json:"symbols,omitempty"`
	Emulated bool     `json:"emulated"`
	Warmup   bool     `json:"warmup,omitempty"`
}

// ThreadSample is one generator thread's share of a sample.
type ThreadSample struct {
	I      int     `json:"i"`
	TxPPS  float64 `json:"tx_pps"`
	Errors uint64  `json:"errors"`
	// LostPPS is the thread's errors per second of its run: packets it
	// offered that the device (start_xmit: the tap's full ring) or the
	// qdisc (queue_xmit) refused. nil = not measured.
	LostPPS *float64 `json:"lost_pps,omitempty"`
}

// Symbol is one row of `perf report`: the percentage of samples (0..100)
// attributed to Symbol in DSO for the perf target Target ("vhost", "qemu",
// ...).
type Symbol struct {
	Target   string  `json:"target,omitempty"`
	Symbol   string  `json:"symbol"`
	DSO      string  `json:"dso,omitempty"`
	Overhead float64 `json:"overhead"`
}

// Env describes where a run was measured: env.json. The runner fills it;
// report only stores and prints it.
type Env struct {
	Run           string    `json:"run,omitempty"`
	Created       time.Time `json:"created,omitempty"`
	Version       string    `json:"version,omitempty"`  // vnetbench version
	Scenario      string    `json:"scenario,omitempty"` // scenario name
	Seed          int64     `json:"seed,omitempty"`     // cell order seed
	Hostname      string    `json:"hostname,omitempty"`
	KernelRelease string    `json:"kernel_release,omitempty"` // uname -r
	Cmdline       string    `json:"cmdline,omitempty"`        // /proc/cmdline
	// Mitigations maps a /sys/devices/system/cpu/vulnerabilities entry to
	// its text ("spectre_v2": "Mitigation: ...").
	Mitigations   map[string]string `json:"mitigations,omitempty"`
	CPUModel      string            `json:"cpu_model,omitempty"`
	CPUs          int               `json:"cpus,omitempty"`
	Governor      string            `json:"governor,omitempty"` // scaling governor, "" when unknown
	SMT           string            `json:"smt,omitempty"`      // /sys/devices/system/cpu/smt/control
	QEMUVersion   string            `json:"qemu_version,omitempty"`
	PerfVersion   string            `json:"perf_version,omitempty"`
	Iperf3Version string            `json:"iperf3_version,omitempty"`
	Accel         string            `json:"accel,omitempty"` // "kvm" or "tcg"
	// Kernels holds the environment seen under each kernel label when it
	// differs from the host's (lab mode: each kernel runs in its own VM).
	Kernels map[string]*Env `json:"kernels,omitempty"`
	// Extra holds facts without a field of their own.
	Extra map[string]string `json:"extra,omitempty"`
}

// Emulated reports whether the environment ran guests without hardware
// acceleration.
func (e *Env) Emulated() bool { return e != nil && e.Accel == "tcg" }

// Key identifies a sample within a run: a repetition of a cell on a kernel.
type Key struct {
	Cell   string
	Kernel string
	Rep    int
}

func (s *Sample) key() Key { return Key{s.Cell, s.Kernel, s.Rep} }

// RunWriter appends samples to a run directory's results.jsonl. It is safe
// for concurrent use.
type RunWriter struct {
	dir  string
	mu   sync.Mutex
	f    *os.File
	done map[Key]bool
	warn []string
}

// ExistsError means CreateRun found a run directory that already holds
// results. ExitCode is 2.
type ExistsError struct{ Dir string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("run directory %s already holds results; pass --resume to continue it or choose another -o", e.Dir)
}

// ExitCode returns 2: bad input.
func (e *ExistsError) ExitCode() int { return 2 }

// CreateRun makes dir (and its artifacts/ subdirectory), writes env.json and
// an empty results.jsonl. It refuses a directory that already holds results
// (use OpenRun to resume).
func CreateRun(dir string, env Env) (*RunWriter, error) {
	if fi, err := os.Stat(filepath.Join(dir, ResultsFile)); err == nil && fi.Size() > 0 {
		return nil, &ExistsError{dir}
	}
	if err := os.MkdirAll(filepath.Join(dir, ArtifactsDir), 0o755); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	if err := WriteEnv(dir, env); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, ResultsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create results: %w", err)
	}
	return &RunWriter{dir: dir, f: f, done: map[Key]bool{}}, nil
}

// OpenRun opens an existing run directory for appending (resume). Samples
// already present are reported by Done and Completed. A torn last line (a
// crash mid-write) is cut off so the next Append starts a fresh line; a
// warning about it is returned by Warnings.
func OpenRun(dir string) (*RunWriter, error) {
	path := filepath.Join(dir, ResultsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &InputError{fmt.Sprintf("%s: no %s; is this a run directory written by 'vnetbench run'?", dir, ResultsFile)}
		}
		return nil, fmt.Errorf("open run: %w", err)
	}
	samples, good, warns, err := parseResults(path, data)
	if err != nil {
		return nil, err
	}
	w := &RunWriter{dir: dir, done: map[Key]bool{}, warn: warns}
	for i := range samples {
		if !samples[i].Warmup {
			w.done[samples[i].key()] = true
		}
	}
	if good < len(data) {
		if err := os.Truncate(path, int64(good)); err != nil {
			return nil, fmt.Errorf("cut torn line: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open results: %w", err)
	}
	if good > 0 && data[good-1] != '\n' {
		if _, err := f.Write([]byte{'\n'}); err != nil {
			f.Close()
			return nil, fmt.Errorf("open results: %w", err)
		}
	}
	w.f = f
	return w, nil
}

// Dir returns the run directory.
func (w *RunWriter) Dir() string { return w.dir }

// Warnings returns what OpenRun noticed (torn last line).
func (w *RunWriter) Warnings() []string { return w.warn }

// Done reports whether the run already holds a (non-warmup) sample for
// the repetition rep of cell on kernel.
func (w *RunWriter) Done(cell, kernel string, rep int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done[Key{cell, kernel, rep}]
}

// Completed returns the keys of all (non-warmup) samples in the run.
func (w *RunWriter) Completed() []Key {
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := make([]Key, 0, len(w.done))
	for k := range w.done {
		keys = append(keys, k)
	}
	return keys
}

// Append writes s as one line of results.jsonl and fsyncs it. A zero Schema
// is set to SchemaVersion.
func (w *RunWriter) Append(s Sample) error {
	if s.Schema == 0 {
		s.Schema = SchemaVersion
	}
	s = dropNonFinite(s)
	b, err := json.Marshal(&s)
	if err != nil {
		return fmt.Errorf("encode sample %s rep %d: %w", s.Cell, s.Rep, err)
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return errors.New("append sample: run writer is closed")
	}
	if _, err := w.f.Write(b); err != nil {
		return fmt.Errorf("append sample: %w", err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("append sample: fsync: %w", err)
	}
	if !s.Warmup {
		w.done[s.key()] = true
	}
	return nil
}

// WriteEnv replaces the run's env.json.
func (w *RunWriter) WriteEnv(env Env) error { return WriteEnv(w.dir, env) }

// ArtifactDir creates and returns the directory for the raw outputs of one
// sample, artifacts/<kernel>/<cell>/<rep> (absolute), and the same path
// relative to the run directory, as Sample.Artifacts entries should be.
func (w *RunWriter) ArtifactDir(cell, kernel string, rep int) (abs, rel string, err error) {
	parts := []string{ArtifactsDir, safeName(kernel)}
	for _, p := range strings.Split(cell, "/") {
		parts = append(parts, safeName(p))
	}
	parts = append(parts, fmt.Sprint(rep))
	rel = filepath.Join(parts...)
	abs = filepath.Join(w.dir, rel)
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", "", fmt.Errorf("create artifact directory: %w", err)
	}
	return abs, rel, nil
}

// dropNonFinite removes NaN and ±Inf metrics (JSON cannot hold them) and
// says so in the sample's warnings.
func dropNonFinite(s Sample) Sample {
	var bad []string
	for k, v := range s.Metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return s
	}
	sort.Strings(bad)
	m := make(map[string]float64, len(s.Metrics))
	for k, v := range s.Metrics {
		if !slices.Contains(bad, k) {
			m[k] = v
		}
	}
	s.Metrics = m
	s.Warnings = append(slices.Clone(s.Warnings), "dropped non-finite metrics: "+strings.Join(bad, ", "))
	return s
}

func safeName(s string) string {
	if s == "" || s == "." || s == ".." {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.', r == '+', r == '=', r == ',':
			return r
		}
		return '_'
	}, s)
}

// Close closes results.jsonl.
func (w *RunWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// WriteEnv writes env.json in dir atomically (temporary file + rename).
func WriteEnv(dir string, env Env) error {
	b, err := json.MarshalIndent(&env, "", "  ")
	if err != nil {
		return fmt.Errorf("encode env: %w", err)
	}
	b = append(b, '\n')
	tmp := filepath.Join(dir, EnvFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write env: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, EnvFile)); err != nil {
		return fmt.Errorf("write env: %w", err)
	}
	return nil
}

// ReadEnv reads dir's env.json. A missing file gives a zero Env and no
// error.
func ReadEnv(dir string) (*Env, error) {
	b, err := os.ReadFile(filepath.Join(dir, EnvFile))
	if errors.Is(err, fs.ErrNotExist) {
		return &Env{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read env: %w", err)
	}
	var env Env
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, &InputError{fmt.Sprintf("%s: %v; fix or delete the file", filepath.Join(dir, EnvFile), err)}
	}
	return &env, nil
}

// InputError is bad input to report (a missing or malformed file, an
// unknown metric, a bad gate): ExitCode 2.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// ExitCode returns 2: bad input.
func (e *InputError) ExitCode() int { return 2 }

func inputErrorf(format string, a ...any) error { return &InputError{fmt.Sprintf(format, a...)} }

// parseResults decodes results.jsonl data. It returns the samples, the
// number of bytes that form complete good lines, and warnings. A final line
// that does not decode (torn write) is a warning; any other bad line is an
// error naming file and line.
func parseResults(path string, data []byte) ([]Sample, int, []string, error) {
	var (
		out   []Sample
		warns []string
		off   int
		line  int
	)
	for off < len(data) {
		line++
		end := bytes.IndexByte(data[off:], '\n')
		last := end < 0
		var raw []byte
		next := len(data)
		if !last {
			raw = data[off : off+end]
			next = off + end + 1
			last = next == len(data)
		} else {
			raw = data[off:]
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			off = next
			continue
		}
		var s Sample
		dec := json.NewDecoder(bytes.NewReader(raw))
		err := dec.Decode(&s)
		if err == nil && s.Schema > SchemaVersion {
			return nil, 0, nil, inputErrorf("%s:%d: schema %d is newer than this vnetbench understands (%d); upgrade vnetbench", path, line, s.Schema, SchemaVersion)
		}
		if err != nil {
			if last {
				warns = append(warns, fmt.Sprintf("%s:%d: ignoring torn last line (%d bytes): %v", path, line, len(raw), err))
				return out, off, warns, nil
			}
			return nil, 0, nil, inputErrorf("%s:%d: %v; the results file is damaged (delete the line to keep the rest)", path, line, err)
		}
		if end < 0 {
			// Complete JSON but no newline: keep it, but a writer must add
			// the newline before appending.
			out = append(out, s)
			return out, len(data), warns, nil
		}
		out = append(out, s)
		off = next
	}
	return out, off, warns, nil
}
