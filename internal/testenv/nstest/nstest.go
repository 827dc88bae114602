// Package nstest gives a test package network namespaces of its own:
// named after the package's prefix and the test process (packages tested
// at once never see each other's), deleted when the test that made one
// ends, and counted by Main, which fails the package when one is left
// behind. It is apart from internal/testenv because it needs
// internal/hostnet, whose own tests use testenv.
package nstest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
	"testing"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/testenv"
)

// Prefix names a test package's namespaces: Prefix("vnbrr") makes
// vnbrr-PID-1, vnbrr-PID-2, ...
type Prefix string

func (p Prefix) withPID() string { return fmt.Sprintf("%s-%d-", p, os.Getpid()) }

// Main is a TestMain: it runs the tests and exits, with status 1 also
// when they left a namespace of p behind.
func (p Prefix) Main(m *testing.M) { os.Exit(testenv.RunNoNetnsLeft(m, p.withPID())) }

var seq atomic.Int32

// New makes a namespace named after p, deleted when the test ends (a
// delete that fails fails the test). The caller has checked for root
// (testenv.NeedRoot).
func (p Prefix) New(tb testing.TB) *hostnet.Netns {
	tb.Helper()
	ns, err := hostnet.CreateNetns(fmt.Sprintf("%s%d", p.withPID(), seq.Add(1)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := ns.Delete(); err != nil {
			tb.Error(err)
		}
	})
	return ns
}

// NoIPv6 is New with IPv6 off for the links made in the namespace
// afterwards: no router solicitations or MLD reports on a tap or veth to
// count among a test's frames (a kernel without IPv6 has none anyway).
func (p Prefix) NoIPv6(tb testing.TB) *hostnet.Netns {
	tb.Helper()
	ns := p.New(tb)
	if err := ns.Do(func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0)
	}); err != nil && !errors.Is(err, fs.ErrNotExist) {
		tb.Fatal(err)
	}
	return ns
}
