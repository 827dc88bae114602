package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/vmimages"
)

// A stats request whose reply never comes (lost on the virtio-serial port)
// is asked again after its attempt time (statsAttempt); a guest that answers none of
// statsAttempts requests has stopped answering and fails then, well before
// the caller's deadline.
func TestVMAgentStatsRetries(t *testing.T) {
	const attempt = 100 * time.Millisecond
	for _, tc := range []struct {
		name   string
		answer func(n int) bool // answer the n-th stats request (1-based)?
		ok     bool
	}{
		{"second answered", func(n int) bool { return n >= 2 }, true},
		{"never answered", func(int) bool { return false }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int32
			a := pipeAgent(t, attempt, func(w io.Writer, req vmimages.Request) {
				n := int(requests.Add(1))
				if req.Op == vmimages.OpStats && tc.answer(n) {
					fmt.Fprintf(w, `{"ev":"stats","id":%d,"eth0":{"rx_packets":42}}`+"\n", req.ID)
				}
			})
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			start := time.Now()
			s, err := a.Stats(ctx)
			if tc.ok {
				if err != nil || s.RxPackets != 42 {
					t.Errorf("stats %+v, %v; want rx_packets 42", s, err)
				}
				return
			}
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stopped answering") {
				t.Errorf("err %v, want the guest to have stopped answering", err)
			}
			if d := time.Since(start); d > 2*time.Second || int(requests.Load()) != statsAttempts {
				t.Errorf("gave up after %v and %d requests, want %d requests of %v", d, requests.Load(), statsAttempts, attempt)
			}
		})
	}
}

// A workload's op reaches the guest through Do: its detail comes back,
// and a reply marked unsupported (the guest's kernel cannot do the op) is
// a workload.UnsupportedError with the guest's reason, so the cell reads
// n/a; a plain agent error stays an error.
func TestVMAgentDo(t *testing.T) {
	a := pipeAgent(t, 0, func(w io.Writer, req vmimages.Request) {
		switch req.Action {
		case "ok":
			fmt.Fprintf(w, `{"ev":"ok","id":%d,"msg":"counted 42"}`+"\n", req.ID)
		case "na":
			fmt.Fprintf(w, `{"ev":"error","id":%d,"msg":"this kernel has no vsock sockmap support (Linux 6.4+)","unsupported":true}`+"\n", req.ID)
		default:
			fmt.Fprintf(w, `{"ev":"error","id":%d,"msg":"vsock fail: broken"}`+"\n", req.ID)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if d, err := a.Do(ctx, "vsock", "ok"); err != nil || d != "counted 42" {
		t.Errorf("ok: %q, %v", d, err)
	}
	_, err := a.Do(ctx, "vsock", "na")
	if why, ok := workload.IsUnsupported(err); !ok || why != "this kernel has no vsock sockmap support (Linux 6.4+)" {
		t.Errorf("na: %v, want unsupported with the guest's reason", err)
	}
	_, err = a.Do(ctx, "vsock", "fail")
	if _, ok := workload.IsUnsupported(err); ok || err == nil || err.Error() != "agent vsock: vsock fail: broken" {
		t.Errorf("fail: %v", err)
	}
}

// A workload's op or a sink whose request or reply is lost on the port
// (the iperf3 server's start in a nested TCG guest after a trafgen
// flood) is asked again after the client's attempt time, the same
// request marked as a retry, instead of waited for until the caller's
// deadline (timeouts.traffic).
func TestVMAgentDoRetries(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		call       func(context.Context, *vmAgent) error
	}{
		{"op", "1 iperf3 start retry=false|1 iperf3 start retry=true", func(ctx context.Context, a *vmAgent) error {
			d, err := a.Do(ctx, "iperf3", "start")
			if err == nil && d != "listening" {
				err = fmt.Errorf("detail %q, want the retry's", d)
			}
			return err
		}},
		{"sink", "1 sink xdp-drop retry=false|1 sink xdp-drop retry=true", func(ctx context.Context, a *vmAgent) error {
			return a.Sink(ctx, vmimages.SinkXDPDrop)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			a := pipeAgent(t, 50*time.Millisecond, func(w io.Writer, req vmimages.Request) {
				mu.Lock()
				got = append(got, fmt.Sprintf("%d %s %s retry=%v", req.ID, req.Op, req.Action+req.Kind, req.Retry))
				n := len(got)
				mu.Unlock()
				if n > 1 { // the first is lost
					fmt.Fprintf(w, `{"ev":"ok","id":%d,"msg":"listening"}`+"\n", req.ID)
				}
			})
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if err := tc.call(ctx, a); err != nil {
				t.Fatalf("%v; want the retry's answer", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) < 2 || strings.Join(got[:2], "|") != tc.want {
				t.Errorf("the guest read %q, want %q first", got, tc.want)
			}
		})
	}
}

// pipeAgent is a vmAgent whose guest hands each request it reads to
// answer, which writes the reply (if any) to w; least is the agent's
// least stats attempt and its client's attempt (0 = the defaults).
func pipeAgent(t *testing.T, least time.Duration, answer func(w io.Writer, req vmimages.Request)) *vmAgent {
	host, guest := net.Pipe()
	t.Cleanup(func() { host.Close(); guest.Close() })
	go func() {
		sc := bufio.NewScanner(guest)
		for sc.Scan() {
			var req vmimages.Request
			if json.Unmarshal(sc.Bytes(), &req) == nil {
				answer(guest, req)
			}
		}
	}()
	c := vmimages.NewClient(host)
	if least > 0 {
		c.SetAttempt(least)
	}
	return &vmAgent{c: c, least: least}
}

// A workload's request to a guest known dead (a kernel fault on its
// console, its QEMU still up: nothing answers) fails at once, naming the
// fault, and is not sent: a failed cell's stop of its guest side does
// not wait out its deadline.
func TestWorkloadAgentSkipsDeadGuest(t *testing.T) {
	var asked atomic.Int32
	a := pipeAgent(t, 0, func(w io.Writer, req vmimages.Request) {
		asked.Add(1)
		fmt.Fprintf(w, `{"ev":"ok","id":%d,"msg":"stopped"}`+"\n", req.ID)
	})
	life, kill := context.WithCancelCause(context.Background())
	defer kill(nil)
	g := &guest{agent: a, life: life}
	if d, err := g.workloadAgent().Do(t.Context(), "iperf3", "stop"); err != nil || d != "stopped" {
		t.Fatalf("live guest: %q, %v", d, err)
	}
	kill(&qemu.FaultError{VM: "guest", Line: "Kernel panic - not syncing: Fatal exception"})
	_, err := g.workloadAgent().Do(t.Context(), "iperf3", "stop")
	var fe *qemu.FaultError
	if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), "agent iperf3 stop: not asked, the guest is dead: guest: the kernel reported a fault") {
		t.Errorf("dead guest: %v, want the fault", err)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the guest was asked %d times, want once (while alive)", n)
	}
	if (&guest{}).workloadAgent() != nil {
		t.Error("a guest without an agent gives its workloads one")
	}
}
