package vmimages

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/vmimages/cpio"
)

// BenchmarkBoot measures QEMU start to agent ready (TCG; KVM is used only
// when VNETBENCH_BENCH_ACCEL=kvm, since /dev/kvm existing does not mean it
// works), next to the same kernel booting a busybox /init that only prints a
// line: the agent's overhead over the smallest possible userland. Metrics:
// s/op (host side), boot_ms (guest uptime at ready) and init_ms (uptime when
// /init started).
func BenchmarkBoot(b *testing.B) {
	needQEMU(b)
	k := testKernel(b)
	accel := "tcg"
	if os.Getenv("VNETBENCH_BENCH_ACCEL") == "kvm" {
		accel = "kvm"
	}
	b.Run("agent", func(b *testing.B) {
		img, err := Build(context.Background(), BuildOptions{Kernel: k.Image, Modules: k.Modules, Agent: testAgent(b)})
		if err != nil {
			b.Fatal(err)
		}
		var bootMS, initMS int64
		for i := 0; i < b.N; i++ {
			r := bootOnce(b, img.Kernel, img.Initramfs, accel, GuestConfig{}.Cmdline(), true)
			bootMS += r.BootMS
			initMS += r.InitMS
		}
		b.ReportMetric(float64(bootMS)/float64(b.N), "boot_ms")
		b.ReportMetric(float64(initMS)/float64(b.N), "init_ms")
	})
	b.Run("busybox", func(b *testing.B) {
		bb := "/bin/busybox"
		if out, err := exec.Command("file", "-L", bb).Output(); err == nil && !strings.Contains(string(out), "static") {
			b.Skip("needs busybox-static")
		}
		data, err := os.ReadFile(bb)
		if err != nil {
			b.Skip("needs busybox-static")
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
		if _, err := a.WriteTo(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
		var bootMS int64
		for i := 0; i < b.N; i++ {
			bootMS += bootOnce(b, k.Image, ir, accel, BaseCmdline, false).BootMS
		}
		b.ReportMetric(float64(bootMS)/float64(b.N), "boot_ms")
	})
}

// bootOnce boots one VM without a NIC and returns when the agent is ready
// (agent) or the busybox marker line appeared on the console.
func bootOnce(b *testing.B, kernel, initrd, accel, cmdline string, agent bool) Event {
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
	if agent {
		go func() { _, _ = io.Copy(io.Discard, stdout) }()
		c, err := Dial(ctx, sock)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		r, err := c.WaitReady(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		ev = *r
		_ = c.Poweroff(ctx)
	} else {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if i := strings.Index(sc.Text(), "VNBREADY "); i >= 0 {
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
	b.Logf("%s boot: %v host-side, boot_ms=%d init_ms=%d", map[bool]string{true: "agent", false: "busybox"}[agent], time.Since(start).Round(time.Millisecond), ev.BootMS, ev.InitMS)
	cmd.Wait()
	b.StartTimer()
	return ev
}
