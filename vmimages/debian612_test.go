package vmimages

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

// fetchOrSkip fetches a Debian kernel into the shared cache. A host that
// cannot (no apt, no network, no such package: an InputError) skips with
// the reason, or fails under CI; any other error fails.
func fetchOrSkip(t *testing.T, version string) *Kernel {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	k, err := FetchDebianKernel(ctx, version, "")
	testenv.SkipUnavailable(t, err, "fetch Debian kernel "+version)
	return k
}

// TestBootDebian612 boots a guest on Debian's 6.12 cloud kernel: a "+deb12"
// release whose modules are all .ko.xz (virtio_net and its dependencies,
// and the vsock modules here), decompressed into the image. The agent must
// load them all and report ready on that kernel.
func TestBootDebian612(t *testing.T) {
	needQEMU(t)
	k := fetchOrSkip(t, "6.12")
	if !strings.Contains(k.Release, "+deb12-") {
		t.Fatalf("debian 6.12 resolved to %s, want a +deb12 release", k.Release)
	}
	extra := []string{"vsock", "vmw_vsock_virtio_transport", "vsock_loopback"} // the vsock workload's guest modules
	img, err := Build(t.Context(), BuildOptions{Kernel: k.Image, Modules: k.Modules, Agent: testAgent(t), ExtraModules: extra})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"virtio_net", "vsock", "vmw_vsock_virtio_transport_common", "vmw_vsock_virtio_transport", "vsock_loopback"} {
		if !slices.Contains(img.Modules, m) {
			t.Errorf("image modules %v lack %s", img.Modules, m)
		}
	}
	vm := bootVM(t, img, "", GuestConfig{})
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	ready, err := vm.client.WaitReady(ctx)
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, vm.consoleText())
	}
	t.Logf("ready on %s: /init at %d ms, ready at %d ms (guest clock), %v host-side", ready.Kernel, ready.InitMS, ready.BootMS, time.Since(vm.start).Round(time.Millisecond))
	if ready.Kernel != img.KernelRelease {
		t.Errorf("guest kernel %q, image built for %q", ready.Kernel, img.KernelRelease)
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
