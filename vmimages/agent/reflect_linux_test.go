package agent

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// freeUDPPort is a UDP port free on every address (as the reflector
// binds it) when the kernel picked it; its socket is closed on return.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// startFree starts r on a port pick says is free and returns it. The
// reflector binds the port itself (the host sends only its number), so
// another process may take it between the pick and the start: a start
// refused with EADDRINUSE picks again.
func startFree(t *testing.T, r *Reflector, pick func(*testing.T) int) int {
	t.Helper()
	for range 10 {
		port := pick(t)
		_, err := r.Op("start", []string{strconv.Itoa(port)})
		if err == nil {
			return port
		}
		if !errors.Is(err, unix.EADDRINUSE) {
			t.Fatal(err)
		}
		t.Logf("port %d taken since it was picked: %v", port, err)
	}
	t.Fatal("10 picked ports taken before the reflector bound them")
	return 0
}

// A port taken between its pick and the start is picked again.
func TestStartFreeRetriesATakenPort(t *testing.T) {
	taken, err := net.ListenUDP("udp4", &net.UDPAddr{})
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	picks := []int{taken.LocalAddr().(*net.UDPAddr).Port}
	r := NewReflector()
	port := startFree(t, r, func(t *testing.T) int {
		if len(picks) == 1 {
			picks = append(picks, freeUDPPort(t))
			return picks[0]
		}
		return picks[1]
	})
	r.Stop()
	if port != picks[1] {
		t.Errorf("started on %d, want the second pick %d (the first, %d, was taken)", port, picks[1], picks[0])
	}
}

func TestReflectorEchoesAndCounts(t *testing.T) {
	r := NewReflector()
	port := startFree(t, r, freeUDPPort)
	t.Cleanup(func() { r.Stop() })
	if _, err := r.Op("start", []string{strconv.Itoa(port + 1)}); err == nil {
		t.Error("a start on another port while reflecting: no error")
	}
	c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, size := range []int{16, 1400, 64} {
		msg := bytes.Repeat([]byte{byte('a' + i)}, size)
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 2048)
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("probe %d: no reflection: %v", i, err)
		}
		if !bytes.Equal(buf[:n], msg) {
			t.Fatalf("probe %d: got %d bytes back, want the %d sent unchanged", i, n, size)
		}
	}
	detail, err := r.Op("stop", nil)
	if err != nil || detail != "reflected 3" {
		t.Errorf("stop = %q, %v; want \"reflected 3\"", detail, err)
	}
	// Stopped: the port is free again and a second stop is harmless.
	if detail, _ := r.Op("stop", nil); detail != "reflected 0" {
		t.Errorf("second stop = %q, want \"reflected 0\"", detail)
	}
	l, err := net.ListenUDP("udp4", &net.UDPAddr{Port: port})
	if err != nil {
		t.Errorf("port %d still taken after stop: %v", port, err)
	} else {
		l.Close()
	}
}

func TestReflectorBadRequests(t *testing.T) {
	r := NewReflector()
	for _, args := range [][]string{nil, {"0"}, {"70000"}, {"x"}, {"1", "2"}} {
		if _, err := r.Op("start", args); err == nil {
			t.Errorf("start %q: no error", args)
		}
	}
	if _, err := r.Op("pause", nil); err == nil {
		t.Error("unknown action: no error")
	}
}
