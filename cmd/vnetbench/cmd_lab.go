package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/runner/labvm"
)

// Hidden lab-mode commands, registered here so main.go's table stays as is:
// lab-init is the lab VM's /init (the kernel passes it after "--"; main's
// dispatch in cmd_agent.go routes a PID 1 with "lab-init" in argv here),
// and lab-selftest is the in-lab pktgen check against a nested guest.
func init() {
	commands[labvm.InitCommand] = command{summary: "(internal) /init of a lab VM; runs only as PID 1", run: cmdLabInit, hidden: true}
	commands["lab-selftest"] = command{summary: "(internal) inside a lab VM: pktgen into a nested guest over tap and tap+vhost", run: cmdLabSelfTest, hidden: true}
}

func cmdLabInit(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	return labvm.Init()
}

func cmdLabSelfTest(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("lab-selftest", "--guest-kernel IMAGE --guest-modules DIR -o DIR", stderr)
	var c labvm.SelfTestConfig
	var backends string
	pathVar(fs, &c.GuestKernel, "guest-kernel", "nested guest `bzImage`")
	pathVar(fs, &c.GuestModules, "guest-modules", "nested guest modules `dir`")
	fs.StringVar(&backends, "backends", "tap,tap+vhost", "comma-separated backends")
	fs.Uint64Var(&c.Count, "count", 20000, "pktgen packets")
	fs.DurationVar(&c.Duration, "duration", 60*time.Second, "pktgen deadline")
	fs.DurationVar(&c.BootTimeout, "boot-timeout", 400*time.Second, "nested guest boot deadline")
	fs.StringVar(&c.GuestAppend, "guest-append", "", "nested guest kernel parameters in place of its TCG tuning")
	var variants string
	fs.StringVar(&variants, "variants", "", "`;`-separated nested guest kernel parameters to compare in place of its TCG tuning (one boot each)")
	fs.BoolVar(&c.BootOnly, "boot-only", false, "boot the nested guests and measure, no pktgen")
	pathVar(fs, &c.OutDir, "o", "output `dir` (selftest.json, nested consoles)")
	var ps labvm.PerfStressConfig
	fs.IntVar(&ps.Iterations, "perf-stress", 0, "instead of the self-test: `N` perf stat sessions on busy kpktgend threads (a lockup reproducer)")
	fs.StringVar(&ps.Order, "perf-order", labvm.PerfDuring, "perf stress: perf against pktgen, during | after-start | around")
	fs.IntVar(&ps.Threads, "perf-threads", 1, "perf stress: pktgen threads")
	fs.DurationVar(&ps.Hold, "perf-hold", 300*time.Millisecond, "perf stress: pktgen run per session")
	fs.StringVar(&ps.Guest, "perf-guest", "", "perf stress: backend of a nested guest reading the tap (tap | tap+vhost; empty: the test reads it)")
	fs.BoolVar(&ps.Drain, "perf-drain", true, "perf stress without a nested guest: read the tap")
	fs.BoolVar(&ps.Keep, "perf-keep", false, "perf stress: hold the perf static keys on for the whole run (the fix)")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if ps.Iterations > 0 {
		if c.OutDir == "" {
			return usageErrorf("lab-selftest: -o is required")
		}
		ps.OutDir, ps.Log, ps.SelfTest = c.OutDir, stdout, c
		res, err := labvm.PerfStress(ctx, ps)
		if res != nil {
			b, _ := json.Marshal(res)
			fmt.Fprintf(stdout, "perf-stress: %s\n", b)
		}
		return err
	}
	if c.GuestKernel == "" || c.GuestModules == "" || c.OutDir == "" {
		return usageErrorf("lab-selftest: --guest-kernel, --guest-modules and -o are required")
	}
	c.Backends = strings.Split(backends, ",")
	if variants != "" {
		c.Variants = strings.Split(variants, ";")
	}
	c.Log = stdout
	res, err := labvm.SelfTest(ctx, c)
	if res != nil {
		b, _ := json.Marshal(res)
		fmt.Fprintf(stdout, "selftest: %s\n", b)
	}
	return err
}
