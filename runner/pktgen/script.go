package pktgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/runner/proc"
)

// sampleScripts maps a mode to the kernel's sample script.
var sampleScripts = map[string]string{
	ModeSimple:          "pktgen_sample01_simple.sh",
	ModeMultiqueue:      "pktgen_sample02_multiqueue.sh",
	ModeBurstSingleFlow: "pktgen_sample03_burst_single_flow.sh",
}

// ScriptConfig runs one of the kernel's own samples/pktgen scripts.
type ScriptConfig struct {
	Config
	// KernelTree is a kernel source tree holding samples/pktgen.
	KernelTree string
	// Sample chooses the script by the mode it mirrors: simple (sample01,
	// default), multiqueue (sample02) or burst_single_flow (sample03).
	Sample string
}

// ScriptCmd returns the command that runs the sample script: argv only,
// values passed as separate arguments (-i -m -d -n -t -b -s [-w]).
// It is pure.
func ScriptCmd(c ScriptConfig) (proc.Cmd, *Plan, error) {
	sample := c.Sample
	if sample == "" {
		sample = ModeSimple
	}
	name, ok := sampleScripts[sample]
	if !ok {
		return proc.Cmd{}, nil, configErrorf("unknown sample %q for script mode; use simple, multiqueue or burst_single_flow", sample)
	}
	if c.KernelTree == "" {
		return proc.Cmd{}, nil, configErrorf("script mode needs a kernel source tree (script_dir) holding samples/pktgen")
	}
	cfg := c.Config
	cfg.Mode = sample
	p, err := NewPlan(cfg) // validates values and names the devices
	if err != nil {
		return proc.Cmd{}, nil, err
	}
	cfg = p.Config
	script := filepath.Join(c.KernelTree, "samples", "pktgen", name)
	argv := []string{"bash", script,
		"-i", cfg.Dev,
		"-m", cfg.DstMAC,
		"-d", cfg.Dst,
		"-n", strconv.FormatUint(cfg.Count, 10),
		"-t", strconv.Itoa(cfg.Threads),
		"-b", strconv.Itoa(cfg.Burst),
		"-s", strconv.Itoa(cfg.PktSize),
	}
	if cfg.FirstThread != 0 {
		argv = append(argv, "-f", strconv.Itoa(cfg.FirstThread))
	}
	if cfg.CloneSkb != 0 {
		argv = append(argv, "-c", strconv.Itoa(cfg.CloneSkb))
	}
	if cfg.Delay != 0 {
		argv = append(argv, "-w", strconv.FormatInt(cfg.Delay.Nanoseconds(), 10))
	}
	if cfg.UDPDstMin != 0 {
		argv = append(argv, "-p", fmt.Sprintf("%d-%d", cfg.UDPDstMin, cfg.UDPDstMax))
	}
	if strings.Contains(cfg.Dst, ":") {
		argv = append(argv, "-6")
	}
	return proc.Cmd{Argv: argv, Dir: filepath.Dir(script)}, p, nil
}

// Script runs a kernel sample script with exec, bounded by c.Duration
// (SIGINT to the script at the deadline, like the user's ctrl-C), parses
// the Results it prints and reads any device it did not print from
// /proc/net/pktgen; pktgen is reset afterwards.
func (d *Driver) Script(ctx context.Context, exec proc.Executor, c ScriptConfig) (*Result, error) {
	cmd, p, err := ScriptCmd(c)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(cmd.Argv[1]); err != nil {
		return nil, &ConfigError{fmt.Sprintf("script %s not found: script_dir must be a kernel source tree with samples/pktgen", cmd.Argv[1])}
	}
	if err := d.Check(p.Config.Dev); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	start := time.Now()
	pr, err := exec.Start(ctx, cmd)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	var timer <-chan time.Time
	if p.Config.Duration > 0 {
		timer = time.After(p.Config.Duration)
	}
	var errs []error
	select {
	case <-pr.Done():
	case <-timer:
		res.Stopped = true
		_ = pr.Stop(syscall.SIGINT, 10*time.Second)
	case <-ctx.Done():
		res.Stopped = true
		_ = pr.Stop(syscall.SIGINT, 10*time.Second)
		errs = append(errs, ctx.Err())
	}
	res.Elapsed = time.Since(start)
	if werr := pr.Wait(); werr != nil && !res.Stopped {
		errs = append(errs, fmt.Errorf("pktgen script: %w", werr))
	}
	printed := ParseScriptOutput(out.String())
	for _, dev := range p.Devices {
		tr, ok := printed[dev.File]
		if !ok {
			b, rerr := os.ReadFile(filepath.Join(d.procDir(), dev.File))
			if rerr != nil {
				errs = append(errs, fmt.Errorf("pktgen: %s: no result printed and %w", dev.File, rerr))
				continue
			}
			if tr, rerr = ParseResult(string(b)); rerr != nil {
				errs = append(errs, fmt.Errorf("pktgen: %s: %w", dev.File, rerr))
			}
		}
		tr.Thread, tr.Device = dev.Thread, dev.File
		res.Threads = append(res.Threads, tr)
	}
	if err := d.Reset(); err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// ParseScriptOutput reads what the sample scripts print: sample01's
// "Result device: DEV" followed by the whole proc file, sample02/03's
// "Device: DEV" followed by the Result lines. Devices whose section has no
// parsable Result are left out.
func ParseScriptOutput(out string) map[string]ThreadResult {
	res := map[string]ThreadResult{}
	var dev string
	var sec strings.Builder
	flush := func() {
		if dev == "" {
			return
		}
		if tr, err := ParseResult(sec.String()); err == nil {
			res[dev] = tr
		}
		sec.Reset()
	}
	for _, l := range strings.Split(out, "\n") {
		name, ok := strings.CutPrefix(l, "Result device: ")
		if !ok {
			name, ok = strings.CutPrefix(l, "Device: ")
		}
		if ok {
			flush()
			dev = strings.TrimSpace(name)
			continue
		}
		if dev != "" {
			sec.WriteString(l)
			sec.WriteByte('\n')
		}
	}
	flush()
	return res
}
