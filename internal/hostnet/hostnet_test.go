package hostnet

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"golang.org/x/sys/unix"
)

func needRoot(t *testing.T) {
	t.Helper()
	testenv.NeedRoot(t, "network namespaces and tap devices")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
}

func TestNetnsTapQdiscStats(t *testing.T) {
	needRoot(t)
	name := fmt.Sprintf("vnb-test-%d", os.Getpid())
	// Tap names of this process alone: every run's netns has a vnbt0 (the
	// guest's tap), and a run or test elsewhere on the machine must not
	// decide whether this one's tap leaked into the default namespace.
	tap0, tap1 := fmt.Sprintf("vnbh%d", os.Getpid()), fmt.Sprintf("vnbi%d", os.Getpid())
	ns, err := CreateNetns(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Delete(); err != nil {
			t.Error(err)
		}
		for _, l := range Leftovers() {
			if l == name {
				t.Errorf("netns %s left behind", name)
			}
		}
	})
	if _, err := CreateNetns(name); err == nil {
		t.Error("second create of the same name succeeded")
	}
	for _, tap := range []Tap{{Name: tap0, Addr: "10.0.0.1/24"}, {Name: tap1, Queues: 4}} {
		if err := ns.CreateTap(tap); err != nil {
			t.Fatal(err)
		}
	}
	// Not in the harness's namespace.
	if _, err := os.Stat(filepath.Join("/sys/class/net", tap0)); err == nil {
		t.Error("tap visible in the default namespace")
	}
	st, err := ns.LinkStats(tap0)
	if err != nil {
		t.Fatal(err)
	}
	if !st.NoCarrier {
		t.Errorf("tap without a reader should be NO-CARRIER: %+v", st)
	}
	for _, kind := range []string{"pfifo_fast", "noqueue", "pfifo_fast"} {
		if err := ns.SetQdisc(tap0, kind); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		q, err := ns.RootQdisc(tap0)
		if err != nil || q.Kind != kind {
			t.Errorf("after set %s: root %+v, %v", kind, q, err)
		}
	}
	err = ns.SetQdisc(tap0, "vnbnosuchqdisc")
	var qe *QdiscError
	if !errors.As(err, &qe) || !errors.Is(err, fault.ErrCapability) {
		t.Errorf("unknown qdisc: %v", err)
	}
	if err := ns.ResetQdisc(tap0); err != nil {
		t.Error(err)
	}
	if err := ns.DeleteLink(tap1); err != nil {
		t.Error(err)
	}
	if err := ns.DeleteLink(tap1); err != nil {
		t.Errorf("second delete: %v", err)
	}
}

func TestAttachTap(t *testing.T) {
	needRoot(t)
	name := fmt.Sprintf("vnb-attach-%d", os.Getpid())
	ns, err := CreateNetns(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Delete(); err != nil {
			t.Error(err)
		}
	})
	if err := ns.CreateTap(Tap{Name: "vnbs0"}); err != nil {
		t.Fatal(err)
	}
	if err := ns.CreateTap(Tap{Name: "vnbm0", Queues: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.AttachTap("vnbs0", 2); err == nil {
		t.Error("two readers on a single-queue tap: no error")
	}
	if _, err := ns.TapInfo("lo"); err == nil {
		t.Error("TapInfo(lo): no error")
	}
	for _, c := range []struct {
		dev    string
		queues int
		mq     bool
	}{{"vnbs0", 1, false}, {"vnbm0", 3, true}} {
		files, err := ns.AttachTap(c.dev, c.queues)
		if err != nil {
			t.Fatal(err)
		}
		ti, err := ns.TapInfo(c.dev)
		if err != nil {
			t.Fatal(err)
		}
		want := TapInfo{MultiQueue: c.mq, VnetHdr: true}
		if c.mq {
			want.Queues = c.queues
		}
		if ti != want {
			t.Errorf("%s attached: %+v, want %+v", c.dev, ti, want)
		}
		if st, err := ns.LinkStats(c.dev); err != nil || st.NoCarrier {
			t.Errorf("%s with a reader: %+v %v (want carrier)", c.dev, st, err)
		}
		for _, f := range files {
			f.Close()
		}
		if st, err := ns.LinkStats(c.dev); err != nil || !st.NoCarrier {
			t.Errorf("%s after close: %+v %v (want no carrier)", c.dev, st, err)
		}
	}
}

// Do never leaves the caller's goroutine in the run's namespace: fn runs
// on a throwaway locked thread, a panic in fn reaches the caller, and the
// caller's thread stays in its namespace (before, a panic left the
// caller's thread locked inside the run's namespace).
func TestNetnsDoPanicLeavesCallerOutside(t *testing.T) {
	needRoot(t)
	name := fmt.Sprintf("vnb-test-do-%d", os.Getpid())
	ns, err := CreateNetns(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Delete(); err != nil {
			t.Error(err)
		}
	})
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // observe one thread: this goroutine's
		defer runtime.UnlockOSThread()
		orig, err := netns.Get()
		if err != nil {
			done <- err
			return
		}
		defer orig.Close()
		var inside netns.NsHandle
		recovered := func() (v any) {
			defer func() { v = recover() }()
			ns.Do(func() error {
				inside, _ = netns.Get()
				panic("boom")
			})
			return nil
		}()
		defer inside.Close()
		now, err := netns.Get()
		if err != nil {
			done <- err
			return
		}
		defer now.Close()
		switch {
		case recovered != "boom":
			done <- fmt.Errorf("recovered %v, want the panic of fn", recovered)
		case !inside.IsOpen() || inside.Equal(orig):
			done <- errors.New("fn did not run inside the namespace")
		case !now.Equal(orig):
			done <- errors.New("the caller's thread is left in the run's namespace after a panic in fn")
		default:
			done <- nil
		}
	}()
	if err := <-done; err != nil {
		t.Error(err)
	}
	if err := ns.Do(func() error { return errors.New("fn's error") }); err == nil || err.Error() != "fn's error" {
		t.Errorf("Do returned %v, want fn's error", err)
	}
}

// Do and CreateNetns leave the process's main thread (whose namespace
// /proc/self/net shows) in its namespace: Go cannot end that thread, so
// they must never switch it. (Before, a goroutine that landed there left
// it in the namespace, parked: /proc/net/unix then listed that namespace's
// sockets.)
func TestNetnsDoKeepsMainThread(t *testing.T) {
	needRoot(t)
	before, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := exec.Command("true").Run(); err != nil {
			t.Fatal(err)
		}
		ns, err := CreateNetns(fmt.Sprintf("vnb-test-main-%d-%d", os.Getpid(), i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ns.Delete() })
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				if err := ns.Do(func() error { return nil }); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	if after, _ := os.Readlink("/proc/self/ns/net"); after != before {
		t.Errorf("the main thread moved from %s to %s", before, after)
	}
}

// A namespace whose bind mount another mount covers is still deleted,
// file and mount: on a host whose /run/netns is not a mount point yet,
// `ip netns add` (another test, a user's script) binds /run/netns onto
// itself, recursively, while a run's namespace exists (a CI run left one
// behind that way). The test re-runs itself in a private mount namespace
// (unshare), so that its covering mount stays there.
func TestDeleteCoveredNetns(t *testing.T) {
	needRoot(t)
	if os.Getenv("VNB_HOSTNET_COVERED") == "" {
		testenv.NeedCommand(t, "unshare", "util-linux")
		cmd := exec.Command("unshare", "--mount", "--propagation", "private", os.Args[0], "-test.run=^TestDeleteCoveredNetns$", "-test.v")
		cmd.Env = append(os.Environ(), "VNB_HOSTNET_COVERED=1")
		out, err := cmd.CombinedOutput()
		if cmd.Process != nil {
			// What a failed child left: a plain file once its mounts are gone.
			os.Remove(filepath.Join(NetnsDir, fmt.Sprintf("vnb-test-cover-%d", cmd.Process.Pid)))
		}
		if err != nil || !strings.Contains(string(out), "--- PASS: TestDeleteCoveredNetns") {
			t.Fatalf("in a private mount namespace: %v\n%s", err, out)
		}
		return
	}
	name := fmt.Sprintf("vnb-test-cover-%d", os.Getpid())
	ns, err := CreateNetns(name)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(NetnsDir, name)
	if err := unix.Mount(NetnsDir, NetnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		t.Fatal(err)
	}
	if err := ns.Delete(); err != nil {
		t.Errorf("delete a covered namespace: %v", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("%s left behind", path)
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil || strings.Contains(string(b), name) {
		t.Errorf("a mount of %s left behind (%v):\n%s", name, err, b)
	}
}
