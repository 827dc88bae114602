package vmimages

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/vmimages/cpio"
)

// BenchmarkBoot measures QEMU start to agent ready (TCG; KVM only when
// VNETBENCH_BENCH_ACCEL=kvm, since /dev/kvm existing does not mean it
// works). Each iteration also boots the same kernel with a busybox /init
// that only prints a line, the smallest possible userland, interleaved so
// that load from other processes hits both alike. Metrics (medians):
// agent_s and busybox_s (host side, QEMU start to ready/marker), ratio
// (agent_s/busybox_s), boot_ms (guest uptime at ready), init_ms (uptime
// when the agent started, after mounting /proc).
func BenchmarkBoot(b *testing.B) {
	needQEMU(b)
	k := testKernel(b)
	// VNETBENCH_BENCH_APPEND replaces the command line (GuestCmdline
	// with, under TCG, TCGCmdline), to compare kernel command lines.
	accel, base := "tcg", GuestCmdline(TCGCmdline).String()
	if os.Getenv("VNETBENCH_BENCH_ACCEL") == "kvm" {
		accel, base = "kvm", GuestCmdline("").String()
	}
	if a := os.Getenv("VNETBENCH_BENCH_APPEND"); a != "" {
		base = a
	}
	img, err := Build(context.Background(), BuildOptions{Kernel: k.Image, Modules: k.Modules, Agent: testAgent(b)})
	if err != nil {
		b.Fatal(err)
	}
	bbImg := busyboxInitramfs(b)
	var agentS, bbS, bootMS, initMS []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, ev := bootOnce(b, img.Kernel, img.Initramfs, accel, base, true)
		agentS, bootMS, initMS = append(agentS, s), append(bootMS, float64(ev.BootMS)), append(initMS, float64(ev.InitMS))
		s, _ = bootOnce(b, k.Image, bbImg, accel, base, false)
		bbS = append(bbS, s)
	}
	b.ReportMetric(median(agentS), "agent_s")
	b.ReportMetric(median(bbS), "busybox_s")
	b.ReportMetric(median(agentS)/median(bbS), "ratio")
	b.ReportMetric(median(bootMS), "boot_ms")
	b.ReportMetric(median(initMS), "init_ms")
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// busyboxInitramfs writes an initramfs whose /init is a busybox script that
// prints "VNBREADY <uptime>" and powers off.
func busyboxInitramfs(b *testing.B) string {
	bb := "/bin/busybox"
	data, err := os.ReadFile(bb)
	if err != nil {
		testenv.Skip(b, "needs busybox-static (/bin/busybox)")
	}
	if libs, err := SharedLibs(bb); err != nil || len(libs) > 0 {
		testenv.Skip(b, "needs busybox-static (/bin/busybox is not static)")
	}
	var a cpio.Archive
	a.AddFile("bin/busybox", 0o755, data)
	a.AddFile("init", 0o755, []byte("#!/bin/busybox sh\n/bin/busybox mount -t proc proc /proc\necho \"VNBREADY $(/bin/busybox cat /proc/uptime)\"\n/bin/busybox poweroff -f\n"))
	a.AddDir("proc", 0o755)
	a.AddCharDev("dev/console", 0o600, 5, 1)
	ir := filepath.Join(b.TempDir(), "busybox.cpio")
	f, err := os.Create(ir)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := a.WriteTo(f); err != nil {
		b.Fatal(err)
	}
	return ir
}

// bootOnce boots one VM without a NIC and returns when the agent is ready
// (agent) or the busybox marker line appeared on the console.
func bootOnce(b *testing.B, kernel, initrd, accel, cmdline string, agent bool) (float64, Event) {
	b.Helper()
	dir := b.TempDir()
	sock := filepath.Join(dir, "agent.sock")
	argv := []string{"-nodefaults", "-no-user-config", "-display", "none", "-machine", "q35,accel=" + accel,
		"-cpu", "max", "-m", "512", "-smp", "1", "-kernel", kernel, "-initrd", initrd, "-append", cmdline,
		"-serial", "stdio", "-no-reboot"}
	if agent {
		argv = append(argv, "-device", "virtio-serial-pci",
			"-chardev", "socket,path="+sock+",server=on,wait=off,id=agent",
			"-device", "virtserialport,chardev=agent,name="+AgentPortName)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command("qemu-system-x86_64", argv...)
	stdout, _ := cmd.StdoutPipe()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var ev Event
	var elapsed time.Duration
	if agent {
		go func() { _, _ = io.Copy(io.Discard, stdout) }()
		c, err := dialAgent(ctx, sock)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		r, err := c.WaitReady(ctx)
		if err != nil {
			b.Fatal(err)
		}
		elapsed = time.Since(start)
		b.StopTimer()
		ev = *r
		_ = c.Poweroff(ctx)
	} else {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if i := strings.Index(sc.Text(), "VNBREADY "); i >= 0 {
				elapsed = time.Since(start)
				b.StopTimer()
				up, _, _ := strings.Cut(sc.Text()[i+9:], " ")
				var s float64
				_, _ = fmt.Sscan(up, &s)
				ev.BootMS = int64(s * 1000)
				break
			}
		}
		if ev.BootMS == 0 {
			b.Fatal("busybox init did not print its marker")
		}
	}
	b.Logf("%s boot: %v host-side, boot_ms=%d init_ms=%d", map[bool]string{true: "agent", false: "busybox"}[agent], elapsed.Round(time.Millisecond), ev.BootMS, ev.InitMS)
	cmd.Wait()
	b.StartTimer()
	return elapsed.Seconds(), ev
}
