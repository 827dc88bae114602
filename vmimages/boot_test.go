package vmimages

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

func buildTestImage(tb testing.TB, extra ...string) *Image {
	tb.Helper()
	k := testKernel(tb)
	img, err := Build(context.Background(), BuildOptions{Kernel: k.Image, Modules: k.Modules, Agent: testAgent(tb), Iperf3: true, ExtraModules: extra})
	if err != nil {
		tb.Fatal(err)
	}
	return img
}

func guestConfig() GuestConfig {
	mac, _ := net.ParseMAC(testGuestMAC)
	return GuestConfig{IP: netip.MustParsePrefix(testGuestIP + "/24"), MAC: mac}
}

// TestBootReady boots the image without a NIC: the agent must come up on the
// virtio-serial port, answer ping and unknown ops, and power off on request.
func TestBootReady(t *testing.T) {
	needQEMU(t)
	img := buildTestImage(t)
	vm := bootVM(t, img, "", GuestConfig{})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	ready, err := vm.client.WaitReady(ctx)
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, vm.consoleText())
	}
	t.Logf("ready: boot_ms=%d kernel=%s host-side %v", ready.BootMS, ready.Kernel, time.Since(vm.start))
	if ready.Kernel != img.KernelRelease {
		t.Errorf("guest kernel %q, image built for %q", ready.Kernel, img.KernelRelease)
	}
	if _, err := vm.client.Do(ctx, Request{Op: "frobnicate"}); err == nil {
		t.Error("unknown op: no error")
	}
	if _, err := vm.client.Stats(ctx); err == nil {
		t.Error("stats without a NIC: no error")
	}
	if err := vm.client.Poweroff(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-vm.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("qemu still running 20s after poweroff")
	}
}

// TestBootSerialFallback boots without a virtio-serial port: the agent must
// answer on the serial console, between kernel messages.
func TestBootSerialFallback(t *testing.T) {
	needQEMU(t)
	img := buildTestImage(t)
	vm := bootVMWith(t, img, "", GuestConfig{}.Cmdline(TCGCmdline), true)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	ready, err := vm.client.WaitReady(ctx)
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, vm.consoleText())
	}
	t.Logf("ready over the serial console: boot_ms=%d", ready.BootMS)
	if _, err := vm.client.Do(ctx, Request{Op: "frobnicate"}); err == nil || !strings.Contains(err.Error(), "unknown op") {
		t.Errorf("unknown op over serial: %v", err)
	}
	if err := vm.client.Poweroff(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-vm.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("qemu still running 20s after poweroff")
	}
}

// TestBootFatal: a fatal agent error (here a malformed vnb.ip) prints one
// clear console line and powers the guest off instead of hanging.
func TestBootFatal(t *testing.T) {
	needQEMU(t)
	img := buildTestImage(t)
	vm := bootVMWith(t, img, "", GuestCmdline(TCGCmdline, "vnb.ip=not-an-address").String(), false)
	select {
	case <-vm.exited:
	case <-time.After(90 * time.Second):
		t.Fatalf("guest did not power off after a fatal error\nconsole:\n%s", vm.consoleText())
	}
	con := vm.consoleText()
	if !strings.Contains(con, "vnetbench agent: fatal: kernel command line vnb.ip=not-an-address") || !strings.Contains(con, "powering off") {
		t.Errorf("console lacks the fatal line:\n%s", con)
	}
	if strings.Contains(con, "Kernel panic") {
		t.Errorf("the agent exited instead of powering off:\n%s", con)
	}
}

// TestBootTraffic is the end-to-end check: boot the image with a tap in a
// network namespace this test creates, then push traffic from the netns
// into the guest with each sink and check the agent's counters moved by
// what was sent.
func TestBootTraffic(t *testing.T) {
	needQEMU(t)
	needNetns(t)
	for _, tool := range []string{"iperf3", "trafgen"} {
		testenv.NeedCommand(t, tool, "")
	}
	img := buildTestImage(t)
	ns := testNetns(t)
	// A second NIC (vnb.nic) on its own tap and subnet, as a guest serving
	// a vhost=off and a vhost=on backend at once has.
	gc := guestConfig()
	mac2, _ := net.ParseMAC(testGuest2MAC)
	gc.NICs = []NIC{{MAC: mac2, IP: netip.MustParsePrefix(testGuest2IP + "/24")}}
	vm := bootVM(t, img, ns, gc)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	ready, err := vm.client.WaitReady(ctx)
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, vm.consoleText())
	}
	t.Logf("ready: boot_ms=%d, %v after QEMU start", ready.BootMS, time.Since(vm.start).Round(time.Millisecond))
	stats := func() *Event {
		t.Helper()
		ev, err := vm.client.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Eth0 == nil {
			t.Fatalf("stats without eth0: %+v", ev)
		}
		return ev
	}

	t.Run("iperf3-stack", func(t *testing.T) {
		if err := iperf3(ctx, vm.client, "start"); err != nil {
			t.Fatal(err)
		}
		before := stats()
		out, err := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "iperf3", "-c", testGuestIP, "-t", "5", "--json").Output()
		if err != nil {
			t.Fatalf("iperf3 -c: %v\n%s", err, out)
		}
		after := stats()
		var res struct {
			End struct {
				SumSent     struct{ Bytes uint64 } `json:"sum_sent"`
				SumReceived struct{ Bytes uint64 } `json:"sum_received"`
			} `json:"end"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("iperf3 json: %v", err)
		}
		got := after.Eth0.RxBytes - before.Eth0.RxBytes
		recv, sent := res.End.SumReceived.Bytes, res.End.SumSent.Bytes
		// eth0 counts whole frames: every payload byte iperf3's receiver
		// got, plus Ethernet/IP/TCP headers (under 5% at a 1448-byte MSS,
		// less with GSO), the control connection and retransmissions (under
		// 5% more on a lossless tap). So: recv <= got <= 1.1*sent + 1 MiB.
		t.Logf("iperf3: sent %d B, received %d B; guest eth0 rx_bytes +%d, rx_packets +%d", sent, recv, got, after.Eth0.RxPackets-before.Eth0.RxPackets)
		if recv == 0 || got < recv || float64(got) > 1.1*float64(sent)+1<<20 {
			t.Errorf("guest rx_bytes delta %d outside [%d, 1.1*%d+1MiB]", got, recv, sent)
		}
		if err := iperf3(ctx, vm.client, "stop"); err != nil {
			t.Fatal(err)
		}
	})

	// trafgen sends exactly n UDP packets from source port 7777.
	const n = 20000
	cfg := filepath.Join(t.TempDir(), "udp.cfg")
	conf := fmt.Sprintf("{ eth(da=%s, sa=02:00:00:00:00:01), ipv4(sa=%s, da=%s), udp(sp=7777, dp=9), fill(0x00, 18) }\n", testGuestMAC, testHostIP, testGuestIP)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	trafgen := func(t *testing.T) (tapTx uint64) {
		t.Helper()
		tx0, _ := tapStats(t, ns)
		out, err := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "trafgen", "--dev", "vnbt0", "--conf", cfg,
			"--cpus", "1", "--no-sock-mem", "-n", fmt.Sprint(n), "-b", "20000pps").CombinedOutput()
		if err != nil {
			t.Fatalf("trafgen: %v\n%s", err, out)
		}
		time.Sleep(500 * time.Millisecond) // let QEMU drain the tap into the guest
		tx1, _ := tapStats(t, ns)
		return tx1 - tx0
	}

	t.Run("flow-count", func(t *testing.T) {
		if err := vm.client.Sink(ctx, SinkFlowCount); err != nil {
			t.Fatal(err)
		}
		tapTx := trafgen(t)
		ev := stats()
		got := ev.Flows["7777"]
		// The tap hands QEMU every packet it transmits (tx_packets counts
		// what QEMU read) and QEMU never drops into a full ring (it stops
		// reading), so the guest sees all n. The AF_PACKET socket may still
		// lose some if the agent falls behind and its buffer overflows; it
		// reports those as flow_drops. So: counted + flow_drops == n (give
		// or take 5 for packets still in the buffer), and at least 90%
		// counted.
		t.Logf("trafgen %d packets, tap tx_packets +%d, flow 7777 counted %d, socket drops %d, flows %v", n, tapTx, got, ev.FlowDrops, ev.Flows)
		if tapTx < n {
			t.Errorf("tap tx_packets +%d < %d sent", tapTx, n)
		}
		if got > n || got < n*90/100 || got+ev.FlowDrops+5 < n {
			t.Errorf("flow 7777: %d packets counted + %d dropped by the socket, want %d (>= 90%% counted)", got, ev.FlowDrops, n)
		}
	})

	t.Run("xdp-drop", func(t *testing.T) {
		if err := vm.client.Sink(ctx, SinkXDPDrop); err != nil {
			t.Fatal(err)
		}
		before := stats()
		tapTx := trafgen(t)
		after := stats()
		drops := after.XDPDrops - before.XDPDrops
		// XDP drops everything on eth0, so its count is what the tap
		// delivered: trafgen's n packets, plus at most a few IPv6
		// neighbour/router messages the netns sends on its own (the tap
		// counter may also include one still in flight when we sampled).
		t.Logf("trafgen %d packets, tap tx_packets +%d, xdp drops +%d (sink %s)", n, tapTx, drops, after.Sink)
		if drops < n || drops > tapTx {
			t.Errorf("xdp drops +%d, want between %d sent and %d (tap tx_packets delta)", drops, n, tapTx)
		}
		if err := vm.client.Sink(ctx, SinkStack); err != nil {
			t.Fatal(err)
		}
	})

	// The second NIC: trafgen into vnbt1 to its MAC and address; the
	// stats name it by MAC and its counters move, eth0's do not.
	t.Run("second-nic", func(t *testing.T) {
		cfg2 := filepath.Join(t.TempDir(), "udp2.cfg")
		conf := fmt.Sprintf("{ eth(da=%s, sa=02:00:00:00:00:02), ipv4(sa=%s, da=%s), udp(sp=7778, dp=9), fill(0x00, 18) }\n", testGuest2MAC, testHost2IP, testGuest2IP)
		if err := os.WriteFile(cfg2, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		before := stats()
		const n2 = 2000
		tx0, _ := tapStatsOf(t, ns, "vnbt1")
		out, err := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "trafgen", "--dev", "vnbt1", "--conf", cfg2,
			"--cpus", "1", "--no-sock-mem", "-n", fmt.Sprint(n2), "-b", "20000pps").CombinedOutput()
		if err != nil {
			t.Fatalf("trafgen: %v\n%s", err, out)
		}
		time.Sleep(500 * time.Millisecond)
		tx1, _ := tapStatsOf(t, ns, "vnbt1")
		after := stats()
		l0, l1 := before.Links[testGuest2MAC], after.Links[testGuest2MAC]
		if l0 == nil || l1 == nil || after.Links[testGuestMAC] == nil {
			t.Fatalf("stats links %v, want both NICs by MAC", after.Links)
		}
		got := l1.RxPackets - l0.RxPackets
		t.Logf("trafgen %d packets into vnbt1 (tx_packets +%d): second NIC rx_packets +%d, eth0 +%d", n2, tx1-tx0, got, after.Eth0.RxPackets-before.Eth0.RxPackets)
		if got < n2 || got > tx1-tx0 {
			t.Errorf("second NIC rx_packets +%d, want between %d and %d", got, n2, tx1-tx0)
		}
		if d := after.Eth0.RxPackets - before.Eth0.RxPackets; d >= n2 {
			t.Errorf("eth0 rx_packets +%d: the traffic went to the wrong NIC", d)
		}
	})

	if err := vm.client.Poweroff(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-vm.exited:
	case <-time.After(20 * time.Second):
		t.Error("qemu still running 20s after poweroff")
	}
}

// iperf3 starts or stops the guest's iperf3 server: the iperf3 workload's
// guest op, which the agent (cmd/vnetbench) serves.
func iperf3(ctx context.Context, c *Client, action string) error {
	_, err := c.Do(ctx, Request{Op: "iperf3", Action: action})
	return err
}
