package agent

import (
	"bytes"
	"net"
	"strconv"
	"testing"
	"time"
)

func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

func TestReflectorEchoesAndCounts(t *testing.T) {
	r := NewReflector()
	port := freeUDPPort(t)
	if _, err := r.Op("start", []string{strconv.Itoa(port)}); err != nil {
		t.Fatal(err)
	}
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
