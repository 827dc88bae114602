package vsock_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/workload"
	_ "github.com/vnetbench/vnetbench/internal/workload/all"
	"github.com/vnetbench/vnetbench/internal/workload/vsock"
	"github.com/vnetbench/vnetbench/scenarios"
)

const series = `
name: series
guest: {vcpus: 2, kernel: {debian: "6.12"}}
generator:
  vsock: {redirector: [socat, sockmap], payload: 65536, threads: 1, duration: 5s}
repetitions: 1
`

// The scenario decodes with the series' defaults: virtio transport, port
// 1234, guest CID 3; the redirector is an axis named by its bare value.
func TestScenario(t *testing.T) {
	s, err := scenarios.Load("series.yaml", []byte(series))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range s.Expand() {
		names = append(names, c.Name)
		cfg := c.Generator.Config.(*vsock.Config)
		if cfg.Transport != vsock.Virtio || cfg.Port != 1234 || cfg.CID != 3 || cfg.Payload != 65536 || cfg.Duration.Seconds() != 5 {
			t.Errorf("%s: %+v", c.Name, cfg)
		}
		if c.Axes["generator.vsock.redirector"] != cfg.Redirector {
			t.Errorf("%s: axes %v", c.Name, c.Axes)
		}
	}
	if want := []string{"tap/vsock-t1/socat", "tap/vsock-t1/sockmap"}; !slices.Equal(names, want) {
		t.Errorf("cells %q, want %q", names, want)
	}
}

// Bad input is one line at its file:line:col, saying what to do, and a
// fault.ErrInput (exit 2): the payload over the unix datagram limit, a
// reserved CID, a typo.
func TestScenarioErrors(t *testing.T) {
	for src, want := range map[string]string{
		"generator: {vsock: {payload: 212961}}\n":     "t.yaml:1:30: generator.vsock.payload: 212961 is above the maximum 212960",
		"generator: {vsock: {payload: 65536}}\n":      "",
		"generator: {vsock: {cid: 2}}\n":              "t.yaml:1:26: generator.vsock.cid: 2 is below the minimum 3",
		"generator: {vsock: {redirector: sockmpa}}\n": `t.yaml:1:33: unknown generator.vsock.redirector "sockmpa"; did you mean sockmap? (allowed: socat, sockmap)`,
		"generator: {vsock: {duration: 0s}}\n":        "t.yaml:1:31: generator.vsock.duration must be above 0, e.g. 10s",
		"generator: {vsock: {transport: vhost}}\n":    `t.yaml:1:32: unknown generator.vsock.transport "vhost" (allowed: virtio, loopback)`,
	} {
		_, err := scenarios.Load("t.yaml", []byte(src))
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", src, err)
			}
			continue
		}
		if err == nil || err.Error() != want {
			t.Errorf("%q:\n got %v\nwant %s", src, err, want)
		}
		if !errors.Is(err, fault.ErrInput) {
			t.Errorf("%q: %v is not bad input (exit 2)", src, err)
		}
	}
	// The limit is the unix datagram limit of the default send buffer.
	if vsock.MaxPayload != 212992-32 {
		t.Errorf("MaxPayload %d", vsock.MaxPayload)
	}
}

// A CID with transport loopback (no vsock device) is a warning, not used.
func TestLoopbackIgnoresCID(t *testing.T) {
	s, err := scenarios.Load("t.yaml", []byte("generator: {vsock: {transport: loopback, cid: 7}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(s.Warnings, "\n"); !strings.Contains(w, "generator.vsock.cid is unused with transport loopback") {
		t.Errorf("warnings %q", s.Warnings)
	}
	c := s.Expand()[0]
	if n := c.Generator.Config.Needs(); n.VsockCID != 0 {
		t.Errorf("loopback needs a vsock device: %+v", n)
	}
}

// What each configuration needs: the guest's modules and vsock device,
// socat in the image, the guest kernel's vsock sockmap.
func TestNeeds(t *testing.T) {
	for _, tc := range []struct {
		cfg      vsock.Config
		cid      uint32
		mods     []string
		programs []string
		features int
	}{
		{vsock.Config{Transport: vsock.Virtio, Redirector: vsock.Socat, CID: 5}, 5, vsock.GuestModules, []string{"socat"}, 0},
		{vsock.Config{Transport: vsock.Virtio, Redirector: vsock.Sockmap, CID: 3}, 3, vsock.GuestModules, nil, 1},
		{vsock.Config{Transport: vsock.Loopback, Redirector: vsock.Sockmap, CID: 3}, 0, vsock.LoopbackModules, nil, 1},
	} {
		n := tc.cfg.Needs()
		if n.VsockCID != tc.cid || !slices.Equal(n.GuestModules, tc.mods) || !slices.Equal(n.GuestPrograms, tc.programs) || len(n.GuestFeatures) != tc.features {
			t.Errorf("%+v: needs %+v", tc.cfg, n)
		}
		if tc.features > 0 && n.GuestFeatures[0].Why != "this kernel has no vsock sockmap support (Linux 6.4+)" {
			t.Errorf("feature %+v", n.GuestFeatures[0])
		}
	}
}

// The table sets socat and sockmap side by side.
func TestTable(t *testing.T) {
	w, ok := workload.Lookup("vsock")
	if !ok {
		t.Fatal("vsock is not registered")
	}
	tab := w.(workload.Tabler).Table()
	v := tab.Versus
	if v == nil || v.ColKey != "redirector" || v.RowKey != "payload" || len(v.Cols) != 2 || v.Cols[0].Value != "socat" || v.Cols[1].Value != "sockmap" || v.Change != "change" {
		t.Errorf("versus %+v", v)
	}
	rows := tab.Rows(1, workload.Seen{})
	if len(rows) != 2 || rows[0].Key != "throughput_bps" || rows[0].Scale.Format(168.8e6*8) != "169 MB/s" || rows[1].Key != "redirector_cpu_frac" {
		t.Errorf("rows %+v", rows)
	}
}
