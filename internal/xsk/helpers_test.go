package xsk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/testenv/nstest"
	"golang.org/x/sys/unix"
)

// TestMain fails the package when a test leaves one of its namespaces
// behind.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		// A generator child of TestCompareTestpmd.
		os.Exit(childMain())
	}
	netns.Main(m)
}

const netns = nstest.Prefix("vnbxdp")

// needHost skips (fails in CI) without root, /dev/net/tun or AF_XDP.
func needHost(t testing.TB) {
	t.Helper()
	testenv.NeedRoot(t, "network namespaces, taps, AF_XDP sockets")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
}

// testTap creates a namespace with a tap (queues > 1: multi-queue) and
// deletes it at cleanup. IPv6 is off in the namespace (no router
// solicitations or MLD reports on the tap), and the tap's queue holds
// testTxQLen frames, so a reader slower than the generator loses none of
// a test's count (tun completes a frame when it queues it, not when it is
// read).
func testTap(t testing.TB, queues int) *hostnet.Netns {
	t.Helper()
	return testTapQLen(t, queues, testTxQLen)
}

// testTapQLen is testTap with the tap's txqueuelen (0 = the kernel's
// default).
func testTapQLen(t testing.TB, queues, txqlen int) *hostnet.Netns {
	t.Helper()
	ns := netns.NoIPv6(t)
	if err := ns.CreateTap(hostnet.Tap{Name: testDev, Queues: queues, TxQLen: txqlen}); err != nil {
		t.Fatal(err)
	}
	return ns
}

const (
	testDev    = "vnbx0"
	testTxQLen = 1 << 16
)

// drain reads a tap's queues as fast as it can, counting frames per
// queue and keeping the first few of each.
type drain struct {
	files  []*os.File
	counts []atomic.Uint64 // IPv4 frames per queue
	other  atomic.Uint64   // anything else
	mu     sync.Mutex
	kept   [][][]byte
	keep   int
	wg     sync.WaitGroup
	errs   []error
}

func startDrain(t testing.TB, ns *hostnet.Netns, queues, keep int) *drain {
	t.Helper()
	return startDrainOn(t, ns, queues, keep, -1)
}

// startDrainOn is startDrain with the readers pinned to a CPU (-1: not
// pinned).
func startDrainOn(t testing.TB, ns *hostnet.Netns, queues, keep, cpu int) *drain {
	t.Helper()
	files, err := ns.AttachTap(testDev, queues)
	if err != nil {
		t.Fatal(err)
	}
	d := &drain{files: files, counts: make([]atomic.Uint64, queues), kept: make([][][]byte, queues), keep: keep,
		errs: make([]error, queues)}
	for i, f := range files {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			if cpu >= 0 {
				// The pinned thread ends with this goroutine.
				runtime.LockOSThread()
				var set unix.CPUSet
				set.Set(cpu)
				if err := unix.SchedSetaffinity(0, &set); err != nil {
					d.errs[i] = err
					return
				}
			}
			buf := make([]byte, 65536)
			for {
				n, err := f.Read(buf)
				if err != nil {
					if !errors.Is(err, os.ErrClosed) {
						d.errs[i] = err
					}
					return
				}
				if n < hostnet.VnetHdrLen+HeaderLen || binary.BigEndian.Uint16(buf[hostnet.VnetHdrLen+12:]) != 0x0800 {
					d.other.Add(1)
					continue
				}
				if c := d.counts[i].Add(1); int(c) <= d.keep {
					d.mu.Lock()
					d.kept[i] = append(d.kept[i], append([]byte(nil), buf[hostnet.VnetHdrLen:n]...))
					d.mu.Unlock()
				}
			}
		}()
	}
	t.Cleanup(d.stop)
	return d
}

func (d *drain) total() uint64 {
	var n uint64
	for i := range d.counts {
		n += d.counts[i].Load()
	}
	return n
}

// waitTotal waits until the readers counted want frames (a completion
// comes from the read, a moment before the reader counts it).
func (d *drain) waitTotal(want uint64) uint64 {
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if d.total() >= want {
			break
		}
	}
	return d.total()
}

func (d *drain) stop() {
	for _, f := range d.files {
		f.Close()
	}
	d.wg.Wait()
	d.files = nil
}

// verifyFrame checks a frame's IPv4 header checksum and UDP checksum
// independently of gopacket.
func verifyFrame(b []byte) error {
	if len(b) < HeaderLen {
		return fmt.Errorf("%d bytes", len(b))
	}
	if et := binary.BigEndian.Uint16(b[12:]); et != 0x0800 {
		return fmt.Errorf("ethertype %#x", et)
	}
	ip := b[14:34]
	if sum := onesSum(ip, 0); sum != 0xffff {
		return fmt.Errorf("IPv4 header checksum does not verify (sum %#x)", sum)
	}
	totLen := int(binary.BigEndian.Uint16(ip[2:]))
	if totLen != len(b)-14 {
		return fmt.Errorf("IPv4 total length %d in a %d-byte frame", totLen, len(b))
	}
	udp := b[34 : 14+totLen]
	if ul := int(binary.BigEndian.Uint16(udp[4:])); ul != len(udp) {
		return fmt.Errorf("UDP length %d, want %d", ul, len(udp))
	}
	// Pseudo-header: addresses, protocol, UDP length.
	var ph [12]byte
	copy(ph[:8], ip[12:20])
	ph[9] = 17
	binary.BigEndian.PutUint16(ph[10:], uint16(len(udp)))
	if sum := onesSum(udp, onesSum(ph[:], 0)); sum != 0xffff {
		return fmt.Errorf("UDP checksum does not verify (sum %#x)", sum)
	}
	return nil
}

func onesSum(b []byte, start uint32) uint32 {
	s := start
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return s
}
