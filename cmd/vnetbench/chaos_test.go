package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/ledger"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner"
)

// chaosEnv sets the number of kill points of TestChaosE2E and makes it
// kill a lab run (quickstart with its kernel in a lab VM) at random times:
// the figure of docs/leftovers.md. Without it the test kills a host
// quickstart run at 3 points that are events, not times (CI): so it does
// not depend on how fast a loaded machine runs.
const chaosEnv = "VNETBENCH_E2E_CHAOS"

// chaosOutEnv names a file the test writes each point's outcome to (JSON).
const chaosOutEnv = "VNETBENCH_E2E_CHAOS_OUT"

// A run SIGKILLed at 3 events (CI) or at random points (the opt-in
// figure, chaosEnv), each followed by doctor --clean and
// run --resume: after the clean nothing of the killed run is left (its
// ledger, namespaces, taps, directories, processes) and nothing else is
// touched (look-alikes and everything that was there before); the resumed
// run completes; its samples are exactly the reference run's keys, none
// lost, none twice. It runs in mount and network namespaces of its own
// (tmpfs on /run and the temporary directory). Its runs take a lock of
// their own; the test holds the host's run lock for the reference run
// and for each point (the kill, the clean and the resume), so it
// measures alone and waits for other runs once per point, not twice.
func TestChaosE2E(t *testing.T) {
	needRunHost(t)
	testenv.NeedCommand(t, "unshare", "util-linux")
	if os.Getenv(inNamespacesEnv) == "" {
		bin := vnetbenchBin(t)
		cmd := exec.CommandContext(t.Context(), "unshare", "--mount", "--net", "--propagation", "private", "--",
			os.Args[0], "-test.run", "^TestChaosE2E$", "-test.v", "-test.timeout", "0")
		cmd.Env = append(os.Environ(), inNamespacesEnv+"=1", "VNETBENCH_BIN="+bin)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if os.Getenv(chaosEnv) != "" {
			// The figure takes an hour or more: show each point as it ends.
			cmd.Stdout = io.MultiWriter(&out, os.Stdout)
			cmd.Stderr = cmd.Stdout
		}
		err := cmd.Run()
		t.Logf("in its own namespaces:\n%s", out.String())
		if err != nil || !strings.Contains(out.String(), "--- PASS: TestChaosE2E") {
			t.Fatalf("the test in its own namespaces: %v", err)
		}
		return
	}
	chaosInNamespaces(t)
}

// chaosPoint is the outcome of one kill.
type chaosPoint struct {
	At    float64 `json:"at_s"`
	Phase string  `json:"phase"`
	// Taken: the run was killed. A run that ended before its kill point
	// tested nothing (RunS is its length): the point is not taken, and
	// neither passes nor fails on what follows.
	Taken    bool    `json:"taken"`
	RunS     float64 `json:"run_s,omitempty"`
	Tries    int     `json:"tries"`
	Listed   int     `json:"listed"`     // leftovers doctor listed
	Clean    bool    `json:"clean"`      // nothing of the run left after --clean
	Untouch  bool    `json:"untouched"`  // nothing else changed
	Resumed  bool    `json:"resumed"`    // run --resume completed
	Samples  bool    `json:"samples_ok"` // exactly the reference's keys, once each
	ResumeS  float64 `json:"resume_s"`
	Problems string  `json:"problems,omitempty"`
}

func chaosInNamespaces(t *testing.T) {
	points, lab := 3, false
	if v := os.Getenv(chaosEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a number of kill points", chaosEnv, v)
		}
		points, lab = n, true
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	tmp, hostLock := privateRunAndTmp(t)
	args := []string{"quickstart", "--seed", "5", "--set", "repetitions=1",
		"--set", "generator.iperf3.duration=2s", "--set", "generator.trafgen.duration=2s"}
	if lab {
		args = append(args, "--kernel", "stock=debian:6.1")
	}
	bin := vnetbenchBin(t)
	plantLookAlikes(t, tmp)
	before := hostState(t, tmp)

	// The reference run: its duration bounds the kill times, its keys are
	// what every resumed run must hold.
	ref := filepath.Join(tmp, "ref")
	lock := holdHostLock(t, hostLock)
	start := time.Now()
	out, err := exec.Command(bin, append([]string{"run"}, append(args, "-o", ref)...)...).CombinedOutput()
	refDur := time.Since(start)
	lock.Release()
	if err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	want := sampleKeys(t, ref)
	t.Logf("reference run: %d samples in %v (%s)", len(want), refDur.Round(time.Second), strings.Join(args, " "))
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("VNETBENCH_E2E_CHAOS_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d", seed)
	draw := &killDraw{rng: rand.New(rand.NewPCG(seed, 1)), bound: refDur}
	events := chaosEvents()
	if lab {
		events = make([]chaosKill, points)
	}
	var outcomes []chaosPoint
	for i, ev := range events {
		dir := filepath.Join(tmp, fmt.Sprintf("run-%d", i))
		lock := holdHostLock(t, hostLock)
		p := takePoint(draw, ev, func(k chaosKill) chaosPoint {
			os.RemoveAll(dir) // a run that ended before an earlier try's kill
			return killAndResume(t, bin, args, dir, k, lab)
		})
		lock.Release()
		checkPoint(t, &p, tmp, dir, before, want)
		t.Logf("point %d, try %d: kill at %.1f s, %s: taken %v, listed %d, clean %v, untouched %v, resumed %v (%.0f s), samples %v%s",
			i+1, p.Tries, p.At, p.Phase, p.Taken, p.Listed, p.Clean, p.Untouch, p.Resumed, p.ResumeS, p.Samples, p.Problems)
		switch {
		case p.Taken && !p.passed():
			t.Errorf("point %d (%s): %s", i+1, p.Phase, p.Problems)
		case !p.Taken && !lab:
			// An event the run passes on the way: a run that ends
			// before it means the event list no longer fits the run.
			t.Errorf("point %d (%s): the run ended before it: the point tests nothing%s", i+1, ev.event, p.Problems)
		}
		outcomes = append(outcomes, p)
		writeChaosOut(outcomes) // each point as it ends: a long figure survives an interruption
		os.RemoveAll(dir)
	}
	if taken, _ := chaosTally(outcomes); taken == 0 {
		t.Errorf("none of %d points taken: every run ended before its kill", len(outcomes))
	}
	summarizeChaos(t, outcomes)
}

// checkPoint adds to a taken point what the host and the resumed run show:
// nothing else touched, and the resumed run's samples exactly want.
func checkPoint(t *testing.T, p *chaosPoint, tmp, dir string, before, want []string) {
	if !p.Taken {
		return
	}
	if got := hostState(t, tmp); !slices.Equal(got, before) {
		p.Problems += fmt.Sprintf("; host state changed: before %v, after %v", before, got)
	} else {
		p.Untouch = true
	}
	p.Samples = p.Resumed && slices.Equal(sampleKeys(t, dir), want)
	if p.Resumed && !p.Samples {
		p.Problems += fmt.Sprintf("; samples %v, want %v", sampleKeys(t, dir), want)
	}
}

// killFrac is how far into the bound (killDraw) a kill time is drawn:
// the last tenth is left, so a run a little faster than the bound is
// still killed.
const killFrac = 0.9

// killDraw draws the figure's kill times, uniform in [0, killFrac of
// bound). The bound is first the reference run's length, then the
// shortest run that ended before its kill: the reference builds the
// kernel and images that later runs find in the cache (4m44s against
// about 4 min in the attempt of 2026-12-02, where a kill drawn late fell
// after the end).
type killDraw struct {
	rng   *rand.Rand
	bound time.Duration
}

func (d *killDraw) next() time.Duration {
	return time.Duration(d.rng.Float64() * killFrac * float64(d.bound))
}

// ended notes a run that ended after run, before its kill.
func (d *killDraw) ended(run time.Duration) {
	if run > 0 {
		d.bound = min(d.bound, run)
	}
}

// pointTries bounds the tries of a time-drawn point: a run that ends
// before its kill lowers the bound, and the point is drawn once more.
const pointTries = 2

// takePoint runs one kill point with try: the event ev, or (ev without
// one) a time from draw, drawn again under the lowered bound when the run
// ended first, at most pointTries times. It returns the last try's
// outcome with the number of tries; one not Taken tested nothing.
func takePoint(draw *killDraw, ev chaosKill, try func(chaosKill) chaosPoint) chaosPoint {
	var p chaosPoint
	for n := 1; n <= pointTries; n++ {
		k := ev
		if k.event == "" {
			k.after = draw.next()
		}
		p = try(k)
		p.Tries = n
		if p.Taken || k.event != "" {
			return p
		}
		draw.ended(time.Duration(p.RunS * float64(time.Second)))
	}
	return p
}

// passed: the point was taken and all held.
func (p chaosPoint) passed() bool {
	return p.Taken && p.Clean && p.Untouch && p.Resumed && p.Samples
}

// chaosTally counts the points taken and those passed; a point not taken
// tested nothing and is not a pass.
func chaosTally(ps []chaosPoint) (taken, passed int) {
	for _, p := range ps {
		taken += b2i(p.Taken)
		passed += b2i(p.passed())
	}
	return taken, passed
}

// chaosKill is when to SIGKILL a run: once reached(dir) holds, or after
// a time.
type chaosKill struct {
	event   string
	reached func(dir string) bool
	after   time.Duration
}

// chaosEvents are the CI's kill points, each an event the run's ledger
// or directory shows, each followed by seconds of work (a guest boot, a
// 2 s window and the next cell), so the run is still going when the
// test, polling every 10 ms, sees it: the run's network namespace made,
// a guest booting (its console log), the first sample written. The kill
// itself waits for a moment when the ledger records nothing as being
// made (killAtRest): a resource made but not yet marked as the run's
// (a tap without its ifalias, a directory without its marker) is not
// provably the run's, and doctor keeps it by design.
func chaosEvents() []chaosKill {
	lines := func(p string) int {
		b, _ := os.ReadFile(p)
		return bytes.Count(b, []byte("\n"))
	}
	return []chaosKill{
		{event: "its network namespace made", reached: func(string) bool {
			made, _ := ledgerStates()
			return made[ledger.Netns] > 0
		}},
		{event: "a guest booting", reached: func(dir string) bool {
			m, _ := filepath.Glob(filepath.Join(dir, "artifacts", "console-*.log"))
			return len(m) > 0
		}},
		{event: "its first sample written", reached: func(dir string) bool {
			return lines(filepath.Join(dir, results.ResultsFile)) > 0
		}},
	}
}

// ledgerStates reads the ledgers under /run (the test's own): how many
// entries of each kind are made, and how many are only intended (being
// made, or killed while being made).
func ledgerStates() (made map[string]int, intents int) {
	made = map[string]int{}
	files, _ := filepath.Glob(filepath.Join(ledger.Default, "*.jsonl"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		kind, state := map[int]string{}, map[int]string{}
		for _, l := range bytes.Split(b, []byte("\n")) {
			var e ledger.Entry
			if json.Unmarshal(l, &e) != nil || e.Seq == 0 {
				continue
			}
			kind[e.Seq], state[e.Seq] = e.Kind, e.State
		}
		for seq, st := range state {
			switch st {
			case "made":
				made[kind[seq]]++
			case "intent":
				intents++
			}
		}
	}
	return made, intents
}

// killAtRest SIGKILLs process pid at a moment its ledger records nothing
// as being made: it stops it (SIGSTOP, every thread), reads the ledger,
// and kills it or lets it go on for 5 ms and tries again. False: the
// process ended first.
func killAtRest(pid int, done <-chan error) bool {
	for {
		syscall.Kill(pid, syscall.SIGSTOP)
		for !allStopped(pid) {
			select {
			case <-done:
				return false
			case <-time.After(time.Millisecond):
			}
		}
		if _, intents := ledgerStates(); intents == 0 {
			syscall.Kill(pid, syscall.SIGKILL)
			return true
		}
		syscall.Kill(pid, syscall.SIGCONT)
		select {
		case <-done:
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// allStopped: every thread of pid is stopped by a signal (or it is gone).
func allStopped(pid int) bool {
	stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	for _, st := range stats {
		b, err := os.ReadFile(st)
		i := bytes.LastIndexByte(b, ')')
		if err == nil && i >= 0 && i+2 < len(b) && b[i+2] != 'T' {
			return false
		}
	}
	return true
}

// killAndResume starts the run into dir, SIGKILLs it at k, waits for its
// processes to end (their parent-death signal), cleans with doctor and
// resumes it. The test process is a child subreaper, so the run's
// processes that outlive it become its children and are reaped.
func killAndResume(t *testing.T, bin string, args []string, dir string, k chaosKill, lab bool) chaosPoint {
	var p chaosPoint
	cmd := exec.Command(bin, append([]string{"run"}, append(args, "-o", dir)...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ended, err := waitKillPoint(k, dir, done)
	if !ended {
		p.At = time.Since(start).Seconds()
		p.Phase = runPhase(dir, lab)
		if k.event == "" {
			cmd.Process.Signal(syscall.SIGKILL)
		} else {
			p.Phase = k.event + ": " + p.Phase
			ended = !killAtRest(cmd.Process.Pid, done)
		}
	}
	if ended {
		p.Phase, p.RunS, p.At = "after the end", time.Since(start).Seconds(), k.after.Seconds()
		p.Problems += fmt.Sprintf("; the run ended (%v) after %.1f s, before its kill point (%s): %s",
			err, p.RunS, k.name(), tailString(out.String(), 1500))
		reapOrphans(t)
		return p
	}
	<-done
	p.Taken = true
	reapOrphans(t)
	list, _ := exec.Command(bin, "doctor", "--leftovers").CombinedOutput()
	p.Listed = strings.Count(string(list), "is gone)")
	cleanOut, cerr := exec.Command(bin, "doctor", "--clean").CombinedOutput()
	after, _ := exec.Command(bin, "doctor", "--leftovers").CombinedOutput()
	ledgers, _ := filepath.Glob("/run/vnetbench/ledger/*.jsonl")
	procs := processesMentioning(dir)
	switch {
	case cerr != nil:
		p.Problems += fmt.Sprintf("; doctor --clean: %v: %s", cerr, cleanOut)
	case !strings.Contains(string(after), "nothing left behind"):
		p.Problems += "; left after --clean: " + string(after)
	case len(ledgers) > 0:
		p.Problems += fmt.Sprintf("; ledgers left: %v", ledgers)
	case len(procs) > 0:
		p.Problems += fmt.Sprintf("; processes of the run left: %v", procs)
	default:
		p.Clean = true
	}
	resume := append([]string{"run"}, append(args, "-o", dir)...)
	if _, err := os.Stat(filepath.Join(dir, results.ResultsFile)); err == nil {
		resume = append(resume, "--resume")
	} else {
		os.RemoveAll(dir) // killed before it wrote one: a new run
	}
	start = time.Now()
	rout, rerr := exec.Command(bin, resume...).CombinedOutput()
	p.ResumeS = time.Since(start).Seconds()
	if rerr != nil {
		p.Problems += fmt.Sprintf("; run --resume: %v: %s", rerr, tailString(string(rout), 1500))
	} else {
		p.Resumed = true
	}
	return p
}

// waitKillPoint waits until k is reached; ended: the run ended first.
func waitKillPoint(k chaosKill, dir string, done chan error) (ended bool, err error) {
	var after <-chan time.Time
	if k.reached == nil {
		after = time.After(k.after)
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return true, err
		case <-after:
			return false, nil
		case <-tick.C:
			if k.reached != nil && k.reached(dir) {
				return false, nil
			}
		}
	}
}

// reapOrphans waits for the killed run's processes, now the test's
// children (it is a subreaper), to end by their parent-death signal, and
// reaps them. One still running after a minute (a QEMU that outlives its
// run) is left to doctor --clean, and reaped when it ends.
func reapOrphans(t *testing.T) {
	for _, pid := range childrenOf(os.Getpid()) {
		go func() {
			var ws unix.WaitStatus
			for {
				if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
					return
				}
			}
		}()
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		alive := slices.DeleteFunc(childrenOf(os.Getpid()), func(pid int) bool {
			_, err := ledger.StartTime(pid)
			return err != nil
		})
		if len(alive) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("processes of the killed run still running after a minute (left to doctor --clean): %v", childrenOf(os.Getpid()))
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		i := bytes.LastIndexByte(b, ')')
		if err != nil || i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			if c, err := strconv.Atoi(filepath.Base(filepath.Dir(st))); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// runPhase names where a run is, from what its directory holds.
func runPhase(dir string, lab bool) string {
	has := func(pattern string) bool { m, _ := filepath.Glob(filepath.Join(dir, pattern)); return len(m) > 0 }
	lines := func(p string) int {
		b, _ := os.ReadFile(filepath.Join(dir, p))
		return bytes.Count(b, []byte("\n"))
	}
	if !lab {
		switch {
		case !has(results.ResultsFile):
			return "start"
		case !has("artifacts/console-*.log"):
			return "netns and image"
		case !has("artifacts/*/*/0"):
			return "guest boot"
		default:
			return fmt.Sprintf("windows (%d samples done)", lines(results.ResultsFile))
		}
	}
	inner := results.LabDir("stock")
	switch {
	case !has(results.LabConsole("stock")):
		return "build (kernel, images)"
	case !has(inner + "/artifacts/console-*.log"):
		return "lab boot"
	case !has(inner + "/artifacts/*/*/0"):
		return "nested guest boot"
	case lines(inner+"/"+results.ResultsFile) < 2:
		return fmt.Sprintf("windows (%d samples done)", lines(inner+"/"+results.ResultsFile))
	default:
		return "import"
	}
}

// sampleKeys lists a run directory's measured samples, cell/kernel/rep,
// sorted, duplicates kept (a duplicate is a failure).
func sampleKeys(t *testing.T, dir string) []string {
	f, err := os.Open(filepath.Join(dir, results.ResultsFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	var keys []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var s results.Sample
		if json.Unmarshal(sc.Bytes(), &s) != nil || s.Warmup || s.Error != "" {
			continue
		}
		keys = append(keys, fmt.Sprintf("%s/%s/%d", s.Cell, s.Kernel, s.Rep))
	}
	slices.Sort(keys)
	return keys
}

// privateRunAndTmp mounts tmpfs on /run (the runs' own lock, ledgers and
// namespaces) and on a new temporary directory, which it returns (TMPDIR
// is set to it) with the path where the host's run lock is bound.
func privateRunAndTmp(t *testing.T) (string, string) {
	tmp := t.TempDir()
	lock := filepath.Join(tmp, "hostlock")
	os.WriteFile(lock, nil, 0o644)
	if _, err := os.Stat(runner.DefaultLockPath); err != nil {
		os.WriteFile(runner.DefaultLockPath, nil, 0o644) // as a run makes it
	}
	if err := unix.Mount(runner.DefaultLockPath, lock, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind the host's run lock: %v", err)
	}
	if err := unix.Mount("tmpfs", "/run", "tmpfs", 0, "mode=0755"); err != nil {
		t.Fatalf("mount tmpfs on /run: %v", err)
	}
	work := filepath.Join(tmp, "tmp")
	os.Mkdir(work, 0o755)
	if err := unix.Mount("tmpfs", work, "tmpfs", 0, "mode=1777"); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", work, err)
	}
	t.Cleanup(func() { unix.Unmount(work, unix.MNT_DETACH); unix.Unmount(lock, unix.MNT_DETACH) })
	t.Setenv("TMPDIR", work)
	if lo, err := netlink.LinkByName("lo"); err == nil {
		netlink.LinkSetUp(lo)
	}
	return work, lock
}

// holdHostLock takes the host's run lock (waiting for other runs).
func holdHostLock(t *testing.T, path string) *runner.Lock {
	l, err := runner.AcquireLockWait(t.Context(), path, 12*time.Hour)
	if err != nil {
		t.Fatalf("host lock: %v", err)
	}
	return l
}

// plantLookAlikes makes what the name-based doctor took for leftovers.
func plantLookAlikes(t *testing.T, tmp string) {
	for _, argv := range [][]string{{"ip", "netns", "add", "vnbox"}, {"ip", "netns", "add", "vnb-1-deadbeef"}, {"ip", "tuntap", "add", "vnbr0", "mode", "tap"}} {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", argv, err, out)
		}
	}
	os.MkdirAll(filepath.Join(tmp, "vnb-results"), 0o755)
	os.WriteFile(filepath.Join(tmp, "vnb-results", results.ResultsFile), []byte("{}\n"), 0o644)
}

// hostState is every network namespace, link and temporary directory
// entry of the test's namespaces, but the run directories.
func hostState(t *testing.T, tmp string) []string {
	var s []string
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		s = append(s, "netns "+e.Name())
	}
	links, _ := netlink.LinkList()
	for _, l := range links {
		s = append(s, "link "+l.Attrs().Name)
	}
	ents, _ = os.ReadDir(tmp)
	for _, e := range ents {
		if n := e.Name(); n != "ref" && !strings.HasPrefix(n, "run-") {
			s = append(s, "tmp "+n)
		}
	}
	slices.Sort(s)
	return s
}

// name is k's event, or its time.
func (k chaosKill) name() string {
	if k.event != "" {
		return k.event
	}
	return fmt.Sprintf("at %.1f s", k.after.Seconds())
}

// summarizeChaos logs the figure: points taken and passed, and of the
// taken ones how many held each check.
func summarizeChaos(t *testing.T, ps []chaosPoint) {
	var clean, untouched, resumed, samples int
	phases := map[string]int{}
	for _, p := range ps {
		if !p.Taken {
			continue
		}
		clean += b2i(p.Clean)
		untouched += b2i(p.Untouch)
		resumed += b2i(p.Resumed)
		samples += b2i(p.Samples)
		phases[strings.SplitN(p.Phase, " (", 2)[0]]++
	}
	taken, passed := chaosTally(ps)
	t.Logf("chaos: %d points, %d taken (%d not: the run ended before its kill), %d passed; of those taken: clean %d, untouched %d, resumed %d, samples exact %d; phases %v",
		len(ps), taken, len(ps)-taken, passed, clean, untouched, resumed, samples, phases)
}

// writeChaosOut writes the outcomes so far to the file chaosOutEnv names.
func writeChaosOut(ps []chaosPoint) {
	if out := os.Getenv(chaosOutEnv); out != "" {
		b, _ := json.MarshalIndent(ps, "", "  ")
		os.WriteFile(out, b, 0o644)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
