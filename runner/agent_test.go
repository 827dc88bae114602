package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/vmimages"
)

// A stats request whose reply never comes (lost on the virtio-serial port)
// is asked again after statsAttempt; a guest that never answers fails at
// the caller's deadline instead of hanging.
func TestVMAgentStatsRetries(t *testing.T) {
	old := statsAttempt
	statsAttempt = 100 * time.Millisecond
	t.Cleanup(func() { statsAttempt = old })
	for _, tc := range []struct {
		name   string
		answer func(n int) bool // answer the n-th stats request (1-based)?
		ok     bool
	}{
		{"second answered", func(n int) bool { return n >= 2 }, true},
		{"never answered", func(int) bool { return false }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host, guest := net.Pipe()
			defer host.Close()
			defer guest.Close()
			requests := 0
			go func() {
				sc := bufio.NewScanner(guest)
				for sc.Scan() {
					var req vmimages.Request
					if json.Unmarshal(sc.Bytes(), &req) != nil {
						continue
					}
					requests++
					if req.Op == vmimages.OpStats && tc.answer(requests) {
						fmt.Fprintf(guest, `{"ev":"stats","id":%d,"eth0":{"rx_packets":42}}`+"\n", req.ID)
					}
				}
			}()
			a := &vmAgent{c: vmimages.NewClient(host)}
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			s, err := a.Stats(ctx)
			if tc.ok {
				if err != nil || s.RxPackets != 42 {
					t.Errorf("stats %+v, %v; want rx_packets 42", s, err)
				}
				return
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err %v, want the deadline", err)
			}
		})
	}
}
