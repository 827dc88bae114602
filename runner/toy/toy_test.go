// Package toy_test is a workload made up for a test: "toyblast" sends
// UDP packets into the tap at a rate and prints what it sent. It lives in
// this folder only (test files), registers itself in TestMain, and
// proof_test.go runs it through the scenario decoder, plan, a
// fake-executor run, the runner's loop and the report: a new workload is
// one folder plus one registration line.
package toy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/perfparse"
)

type toy struct{}

func (toy) Name() string         { return "toy" }
func (toy) Doc() string          { return "toyblast sending UDP packets into the tap (a test's workload)" }
func (toy) New() workload.Config { return &config{} }

func (toy) Tools() []workload.Tool {
	return []workload.Tool{{Name: "toyblast", Package: "toyblast"}}
}

func (toy) Metrics() []metric.Metric {
	return []metric.Metric{
		{Key: "toy_pps", Unit: "pps", Better: metric.HigherIsBetter, Rate: true,
			Description: "packets toyblast sent / its run time, total over its streams"},
		{Key: "toy_errors", Unit: "count", Better: metric.LowerIsBetter, Description: "send errors toyblast counted in its run"},
	}
}

func (toy) Table() workload.Table {
	return workload.Table{Headline: "toy_pps", ThreadsKey: "streams", ThreadsNoun: "streams",
		Rows: func(int, workload.Seen) []workload.TableRow {
			return []workload.TableRow{{Key: "toy_pps", Label: "Sent"}, {Key: "toy_errors", Label: "Errors"}}
		},
		Notes: func(int, workload.Seen) []string {
			return []string{"Sent = packets toyblast counted / its own run time, total over its streams"}
		}}
}

// GuestOps: the toy's guest side counts what it is told to expect (the
// agent runs it in the guest; the host asks with Agent.Do).
func (toy) GuestOps() map[string]workload.GuestOp {
	return map[string]workload.GuestOp{
		"toy-expect": func(action string, args []string) (string, error) {
			if action != "start" || len(args) != 1 {
				return "", fmt.Errorf("want start PACKETS, got %s %q", action, args)
			}
			return "expecting " + args[0] + " packets", nil
		},
	}
}

// config is generator.toy.
type config struct {
	Rate     int // packets/s
	Burst    int
	Duration time.Duration
}

func (c *config) Fields() []schema.Field {
	return []schema.Field{
		schema.Int(&c.Rate, "rate", 1, 10_000_000).Default(1000).Unit("pps").Axis().Short("r").Doc("packets per second"),
		schema.Int(&c.Burst, "burst", 1, 64).Default(1).Unit("packets").Axis().Short("b").Doc("packets per send; the toy tap refuses more than 32"),
		schema.Duration(&c.Duration, "duration").Default(time.Second).Doc("how long toyblast sends"),
	}
}

func (c *config) Resolve(r *workload.Resolver) error {
	if c.Burst > c.Rate {
		return r.Errorf("burst", "generator.toy.burst %d is above rate %d; lower burst", c.Burst, c.Rate)
	}
	if c.Duration == 0 {
		return r.Errorf("duration", "generator.toy.duration must be above 0")
	}
	return nil
}

func (c *config) Length() (time.Duration, bool) { return c.Duration, true }

func (c *config) NamePart() (string, []string) {
	return "toy-r" + strconv.Itoa(c.Rate), []string{"rate"}
}

// summary is toyblast's one line: "sent N packets, E errors in S s".
type summary struct {
	Sent, Errors uint64
	Seconds      float64
}

func parseSummary(r io.Reader) (*summary, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var s summary
	if _, err := fmt.Sscanf(string(b), "sent %d packets, %d errors in %g s", &s.Sent, &s.Errors, &s.Seconds); err != nil || s.Seconds <= 0 {
		return nil, fmt.Errorf("toyblast: no summary in %q", b)
	}
	return &s, nil
}

// ParseKinds: `vnetbench parse toyblast` reads the summary, and auto
// detection knows it.
func (toy) ParseKinds() []perfparse.Kind {
	return []perfparse.Kind{{Name: "toyblast",
		Parse: func(r io.Reader) (any, error) { return parseSummary(r) },
		Detect: func(s, first string) bool {
			return strings.HasPrefix(first, "sent ") && strings.Contains(first, " errors in ")
		}}}
}

// LabModules: a lab VM loads the toy tap's module.
func (toy) LabModules() []string { return []string{"toy_tap"} }

// Needs: toyblast on the host; its guest wants a random number device
// (a QEMU device a workload adds, as vsock adds vhost-vsock-pci).
func (c *config) Needs() workload.Needs {
	return workload.Needs{Tools: []string{"toyblast"}, QEMUArgs: []string{"-device", "virtio-rng-pci"}}
}

func (c *config) args(dev string) []string {
	return []string{"toyblast", "--dev", dev, "--rate", strconv.Itoa(c.Rate), "--burst", strconv.Itoa(c.Burst),
		"--seconds", strconv.FormatFloat(c.Duration.Seconds(), 'f', -1, 64)}
}

func (c *config) Commands(p workload.PlanEnv) []string {
	return []string{proc.Cmd{Argv: c.args(p.Dev), Netns: p.Netns}.String()}
}

func (c *config) Generator() workload.Generator { return &generator{cfg: *c} }

type generator struct {
	cfg   config
	w     *workload.Window
	p     proc.Process
	out   bytes.Buffer
	start time.Time
}

func (g *generator) Start(ctx context.Context, w *workload.Window) error {
	if g.cfg.Burst > 32 {
		return workload.Unsupported("burst %d: the toy tap refuses bursts above 32", g.cfg.Burst)
	}
	g.w = w
	if w.Agent != nil {
		if _, err := w.Agent.Do(ctx, "toy-expect", "start", strconv.Itoa(g.cfg.Rate)); err != nil {
			return fmt.Errorf("toy guest: %w", err)
		}
	}
	p, err := w.Exec.Start(ctx, proc.Cmd{Argv: g.cfg.args(w.Dev), Netns: w.Netns, Stdout: &g.out})
	if err != nil {
		return fmt.Errorf("toyblast: %w", err)
	}
	g.p, g.start = p, time.Now()
	return nil
}

func (g *generator) Threads() ([]int, bool) { return []int{g.p.Pid()}, true }

func (g *generator) Wait(ctx context.Context) (*workload.Result, error) {
	select {
	case <-g.p.Done():
	case <-ctx.Done():
		g.p.Stop(syscall.SIGKILL, time.Second)
		return nil, ctx.Err()
	}
	if err := g.p.Wait(); err != nil {
		return nil, fmt.Errorf("toyblast: %w", err)
	}
	v, err := parseSummary(&g.out)
	if err != nil {
		return nil, err
	}
	sent, errs, secs := v.Sent, v.Errors, v.Seconds
	os.WriteFile(filepath.Join(g.w.Artifacts, "toy.txt"), g.out.Bytes(), 0o644)
	return &workload.Result{Elapsed: time.Since(g.start),
		Metrics:   map[metric.Key]float64{"toy_pps": float64(sent) / secs, "toy_errors": float64(errs)},
		Artifacts: []string{filepath.Join(g.w.RelDir, "toy.txt")}}, nil
}
