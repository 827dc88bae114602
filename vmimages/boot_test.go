package vmimages

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"testing"
	"time"
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

var _ = exec.Command
var _ = json.Marshal
var _ = fmt.Sprint
