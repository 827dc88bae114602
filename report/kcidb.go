package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/results"
)

// KCIDB I/O schema v5.3 (kernelci/kcidb-io): checkouts, builds, tests.
// Every object's id starts with the submitting system's origin and a
// colon; a performance result is a test with status DONE and a number.

var originRE = lazyre.New(`^[a-z0-9_]+$`)

// CheckOrigin returns bad input for an origin KCIDB refuses.
func CheckOrigin(origin string) error {
	if origin == "" {
		return fault.Input("--format kcidb needs --origin NAME: the submitting CI system's name in KCIDB, e.g. --origin mylab")
	}
	if !originRE().MatchString(origin) {
		return fault.Input("--origin %q: KCIDB origins are lower-case letters, digits and _ only, e.g. --origin my_lab", origin)
	}
	return nil
}

type kcidbVersion struct {
	Major int `json:"major"`
	Minor int `json:"minor"`
}

type kcidbCheckout struct {
	ID           string         `json:"id"`
	Origin       string         `json:"origin"`
	TreeName     string         `json:"tree_name,omitempty"`
	CommitHash   string         `json:"git_commit_hash,omitempty"`
	Branch       string         `json:"git_repository_branch,omitempty"`
	PatchsetHash *string        `json:"patchset_hash,omitempty"`
	Valid        bool           `json:"valid"`
	Misc         map[string]any `json:"misc,omitempty"`
}

type kcidbBuild struct {
	ID         string         `json:"id"`
	CheckoutID string         `json:"checkout_id"`
	Origin     string         `json:"origin"`
	Compiler   string         `json:"compiler,omitempty"`
	ConfigName string         `json:"config_name,omitempty"`
	Duration   float64        `json:"duration,omitempty"`
	Status     string         `json:"status"`
	Misc       map[string]any `json:"misc,omitempty"`
}

type kcidbNumber struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
}

type kcidbTest struct {
	ID          string            `json:"id"`
	BuildID     string            `json:"build_id"`
	Origin      string            `json:"origin"`
	Path        string            `json:"path"`
	Status      string            `json:"status"`
	StartTime   string            `json:"start_time,omitempty"`
	Number      *kcidbNumber      `json:"number,omitempty"`
	Environment *kcidbEnvironment `json:"environment,omitempty"`
	LogExcerpt  string            `json:"log_excerpt,omitempty"`
	Misc        map[string]any    `json:"misc,omitempty"`
}

type kcidbEnvironment struct {
	Comment string         `json:"comment,omitempty"`
	Misc    map[string]any `json:"misc,omitempty"`
}

type kcidbData struct {
	Version   kcidbVersion    `json:"version"`
	Checkouts []kcidbCheckout `json:"checkouts"`
	Builds    []kcidbBuild    `json:"builds"`
	Tests     []kcidbTest     `json:"tests"`
}

// WriteKCIDB writes r (built with By "kernel" from set) as KCIDB v5.3
// JSON: a checkout and a build per kernel column from its identity in
// env.json (tree, commit, patches and config hash where the run recorded
// them), one test per cell and metric with status DONE, the median as its
// number and the samples and confidence interval in misc, and one test
// with status ERROR per sample that failed to measure. Ids are
// "origin:vnetbench-..." and stable for the same inputs.
func WriteKCIDB(w io.Writer, set *Runs, r *Report, origin string) error {
	if err := CheckOrigin(origin); err != nil {
		return err
	}
	if r.By != "" && r.By != "kernel" {
		return fault.Input("--format kcidb puts each kernel in its own build: use --by kernel (not %q)", r.By)
	}
	d := kcidbData{Version: kcidbVersion{5, 3}, Checkouts: []kcidbCheckout{}, Builds: []kcidbBuild{}, Tests: []kcidbTest{}}
	buildOf := map[string]string{}
	seen := map[string]bool{}
	for _, col := range r.Columns {
		co, b := kcidbKernel(origin, col, r.Env[col])
		if !seen[co.ID] {
			seen[co.ID] = true
			d.Checkouts = append(d.Checkouts, co)
		}
		if !seen[b.ID] {
			seen[b.ID] = true
			d.Builds = append(d.Builds, b)
		}
		buildOf[col] = b.ID
	}
	first := firstSamples(set)
	for _, s := range r.Summaries {
		d.Tests = append(d.Tests, kcidbSummaryTest(origin, buildOf[s.Column], s, first[[2]string{s.Column, s.Cell}], r.Env[s.Column]))
	}
	if set != nil {
		for _, f := range set.Failed {
			b, ok := buildOf[f.Kernel]
			if !ok {
				continue
			}
			d.Tests = append(d.Tests, kcidbTest{ID: fmt.Sprintf("%s:%s/%s/%s/rep%d", origin, orDash(f.Run), f.Kernel, f.Cell, f.Rep+1),
				BuildID: b, Origin: origin, Path: kcidbPath("vnetbench", f.Cell), Status: "ERROR",
				StartTime: kcidbTime(f.Start), LogExcerpt: truncate(f.Error, 16384), Misc: map[string]any{"kernel": f.Kernel, "cell": f.Cell, "rep": f.Rep + 1}})
		}
	}
	b, err := json.MarshalIndent(&d, "", "  ")
	if err != nil {
		return fmt.Errorf("encode kcidb: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// firstSamples maps (kernel, cell) to its first sample: its run id and
// start time identify the test.
func firstSamples(set *results.Set) map[[2]string]*results.Sample {
	out := map[[2]string]*results.Sample{}
	if set == nil {
		return out
	}
	for i := range set.Samples {
		s := &set.Samples[i]
		k := [2]string{s.Kernel, s.Cell}
		if p, ok := out[k]; !ok || s.Start.Before(p.Start) {
			out[k] = s
		}
	}
	return out
}

func kcidbSummaryTest(origin, build string, s Summary, first *results.Sample, env *results.Env) kcidbTest {
	run, start := "", ""
	if first != nil {
		run, start = first.Run, kcidbTime(first.Start)
	}
	st := s.Stats
	misc := map[string]any{"kernel": s.Column, "cell": s.Cell, "metric": s.Metric, "n": st.N,
		"samples": finiteValues(st.Values), "mean": safeFloat(st.Mean), "stddev": safeFloat(st.Stddev), "min": safeFloat(st.Min), "max": safeFloat(st.Max),
		"ci_level": st.CILevel, "ci_finite": st.CIFinite(), "emulated": s.Emulated}
	if st.CIFinite() {
		misc["ci_lo"], misc["ci_hi"] = st.Lo, st.Hi
	}
	if s.Better != "" {
		misc["better"] = s.Better
	}
	if len(s.Axes) > 0 {
		misc["axes"] = s.Axes
	}
	if run != "" {
		misc["run"] = run
	}
	t := kcidbTest{ID: fmt.Sprintf("%s:%s/%s/%s/%s", origin, orDash(run), s.Column, s.Cell, s.Metric), BuildID: build, Origin: origin,
		Path: kcidbPath("vnetbench", s.Cell, s.Metric), Status: "DONE", StartTime: start, Misc: misc, Environment: kcidbEnv(env)}
	if v := st.Median; !math.IsNaN(v) && !math.IsInf(v, 0) {
		t.Number = &kcidbNumber{Value: v, Unit: s.Unit}
	}
	return t
}

func kcidbEnv(e *results.Env) *kcidbEnvironment {
	if e == nil {
		return nil
	}
	misc := map[string]any{}
	for k, v := range map[string]string{"hostname": e.Hostname, "cpu_model": e.CPUModel, "accel": e.Accel,
		"qemu_version": e.QEMUVersion, "governor": e.Governor, "smt": e.SMT, "cmdline": e.Cmdline} {
		if v != "" {
			misc[k] = v
		}
	}
	if e.CPUs > 0 {
		misc["cpus"] = e.CPUs
	}
	if len(misc) == 0 {
		return nil
	}
	return &kcidbEnvironment{Comment: strings.TrimSpace(e.Hostname + " " + e.CPUModel), Misc: misc}
}

func finiteValues(v []float64) []float64 {
	out := make([]float64, 0, len(v))
	for _, x := range v {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

var pathBad = lazyre.New(`[^a-zA-Z0-9_-]+`)

// kcidbPath joins parts into a KCIDB test path: dot-separated nodes of
// [a-zA-Z0-9_-]; a cell's "/" and a metric's "." start new nodes, other
// characters become "_".
func kcidbPath(parts ...string) string {
	var nodes []string
	for _, p := range parts {
		for _, n := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '.' }) {
			if n = strings.Trim(pathBad().ReplaceAllString(n, "_"), "_"); n != "" {
				nodes = append(nodes, n)
			}
		}
	}
	return strings.Join(nodes, ".")
}

func kcidbTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// orDash is s, or "-" for an empty one.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func shortHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

var commitRE = lazyre.New(`^[0-9a-f]{40}$`)

// kcidbKernel is the checkout and build of kernel column col: a source
// build (Env.Build) names its tree, commit, patches and config; the
// running kernel of a host is known by its release, /proc/version and
// config hash only.
func kcidbKernel(origin, col string, e *results.Env) (kcidbCheckout, kcidbBuild) {
	if e == nil {
		e = &results.Env{}
	}
	co := kcidbCheckout{Origin: origin, Valid: true, Misc: map[string]any{"label": col}}
	b := kcidbBuild{Origin: origin, Status: "PASS", Misc: map[string]any{"label": col}}
	release, procVersion, config := e.KernelRelease, e.ProcVersion, e.ConfigSHA256
	if kb := e.Build; kb != nil {
		release, procVersion, config = orStr(kb.Release, release), orStr(kb.ProcVersion, procVersion), orStr(kb.ConfigSHA256, config)
		co.TreeName = treeName(kb.Tree)
		if commitRE().MatchString(kb.Commit) {
			co.CommitHash = kb.Commit
		}
		co.Branch = kb.Ref
		ph := patchsetHash(kb.Patches)
		co.PatchsetHash = &ph
		co.Misc["tree"] = kb.Tree
		setIf(co.Misc, "commit", kb.Commit)
		setIf(co.Misc, "ref", kb.Ref)
		setIf(co.Misc, "tree_hash", kb.TreeHash)
		var patches []map[string]string
		for _, p := range kb.Patches {
			patches = append(patches, map[string]string{"file": p.File, "subject": p.Subject, "sha256": p.SHA256})
		}
		if patches != nil {
			co.Misc["patches"] = patches
		}
		co.ID = origin + ":vnetbench-src-" + shortHash(kb.Tree, kb.Commit, kb.TreeHash, ph)
		b.Compiler = kb.Compiler
		b.Duration = kb.Seconds
		setIf(b.Misc, "build_key", kb.Key)
		setIf(b.Misc, "fragment_sha256", kb.Fragment)
	} else {
		// No source identity: the checkout is the kernel as it booted.
		co.ID = origin + ":vnetbench-kernel-" + shortHash(release, procVersion)
	}
	setIf(co.Misc, "kernel_release", release)
	setIf(b.Misc, "kernel_release", release)
	setIf(b.Misc, "proc_version", procVersion)
	setIf(b.Misc, "config_sha256", config)
	setIf(b.Misc, "config_source", e.ConfigSource)
	if config != "" {
		b.ConfigName = "sha256:" + config
	}
	b.CheckoutID = co.ID
	b.ID = origin + ":vnetbench-build-" + shortHash(co.ID, release, procVersion, config)
	return co, b
}

// patchsetHash is KCIDB's patchset hash: the SHA-256 of the patches'
// SHA-256s, each newline-terminated, in order; "" without patches.
func patchsetHash(ps []results.PatchID) string {
	if len(ps) == 0 {
		return ""
	}
	h := sha256.New()
	for _, p := range ps {
		fmt.Fprintf(h, "%s\n", p.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// treeName is the last element of a source tree's path or URL.
func treeName(tree string) string {
	tree = strings.TrimSuffix(strings.TrimRight(tree, "/"), ".git")
	if i := strings.LastIndexAny(tree, "/:"); i >= 0 {
		tree = tree[i+1:]
	}
	return tree
}

func setIf(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

func orStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
