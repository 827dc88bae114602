package hostnet

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces and tap devices)")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("no /dev/net/tun")
	}
}

func TestNetnsTapQdiscStats(t *testing.T) {
	needRoot(t)
	name := fmt.Sprintf("vnb-test-%d", os.Getpid())
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
	for _, tap := range []Tap{{Name: "vnbt0", Addr: "10.0.0.1/24"}, {Name: "vnbt1", Queues: 4}} {
		if err := ns.CreateTap(tap); err != nil {
			t.Fatal(err)
		}
	}
	// Not in the harness's namespace.
	if _, err := os.Stat("/sys/class/net/vnbt0"); err == nil {
		t.Error("tap visible in the default namespace")
	}
	st, err := ns.LinkStats("vnbt0")
	if err != nil {
		t.Fatal(err)
	}
	if !st.NoCarrier {
		t.Errorf("tap without a reader should be NO-CARRIER: %+v", st)
	}
	for _, kind := range []string{"pfifo_fast", "noqueue", "pfifo_fast"} {
		if err := ns.SetQdisc("vnbt0", kind); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		q, err := ns.RootQdisc("vnbt0")
		if err != nil || q.Kind != kind {
			t.Errorf("after set %s: root %+v, %v", kind, q, err)
		}
	}
	err = ns.SetQdisc("vnbt0", "vnbnosuchqdisc")
	var qe *QdiscError
	if !errors.As(err, &qe) || qe.ExitCode() != 2 {
		t.Errorf("unknown qdisc: %v", err)
	}
	if err := ns.ResetQdisc("vnbt0"); err != nil {
		t.Error(err)
	}
	if err := ns.DeleteLink("vnbt1"); err != nil {
		t.Error(err)
	}
	if err := ns.DeleteLink("vnbt1"); err != nil {
		t.Errorf("second delete: %v", err)
	}
}
