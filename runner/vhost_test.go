package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/runner/qemu"
)

// TestVhostNet reads /proc trees of a 6.4+ kernel (vhost workers are
// threads of QEMU) and of an older one (kernel threads vhost-PID), with
// and without a vhost-vsock device, and checks what a cell gets: the
// vhost-net workers, one per queue pair, an error when it pins and a
// worker is missing, and what the qemu perf target counts.
func TestVhostNet(t *testing.T) {
	const pid = 4100
	qemuThreads := []proc.Thread{{TID: 4100, Name: "qemu-system-x86"}, {TID: 4101, Name: "qemu-system-x86"}, {TID: 4102, Name: "CPU 0/KVM"}}
	inProcess := func(n int) func(*proc.FakeProc) {
		return func(fp *proc.FakeProc) {
			ts := slices.Clone(qemuThreads)
			for i := range n {
				ts = append(ts, proc.Thread{TID: 4110 + i, Name: "vhost-4100"})
			}
			fp.Process(pid, "qemu-system-x86", ts...)
			fp.KernelThread(3000, "vhost-2999", 100, 0) // another VM's (pre-6.4 host)
		}
	}
	kthreads := func(n int) func(*proc.FakeProc) {
		return func(fp *proc.FakeProc) {
			fp.Process(pid, "qemu-system-x86", qemuThreads...)
			for i := range n {
				fp.KernelThread(4120+i, "vhost-4100", 9000, 0)
			}
			fp.KernelThread(3000, "vhost-2999", 100, 0)
		}
	}
	for _, tc := range []struct {
		name          string
		setup         func(*proc.FakeProc)
		queues        int
		vsock, pinned bool
		want          []int
		warn, err     string
		label         string
	}{
		{"6.4+, 2 queue pairs, pinned", inProcess(2), 2, false, true, []int{4110, 4111}, "", "", "qemu+vhost"},
		{"6.4+, vsock worker left out", inProcess(2), 1, true, true, []int{4110}, "", "", "qemu+vhost"},
		{"pre-6.4 kthreads, 4 queue pairs", kthreads(4), 4, false, true, []int{4120, 4121, 4122, 4123}, "", "", "qemu (vhost kthreads apart)"},
		{"pinned, no worker", kthreads(0), 1, false, true, nil, "", "no vhost-net worker found", "qemu (no vhost worker found)"},
		{"pinned, a queue without worker", inProcess(1), 2, false, true, nil, "", "1 vhost-net workers found for QEMU pid 4100, 2 queue pairs", "qemu+vhost"},
		{"unpinned, no worker", kthreads(0), 1, false, false, nil, "no vhost-net worker found", "", "qemu (no vhost worker found)"},
		{"unpinned, more workers than queues", kthreads(3), 2, false, false, []int{4120, 4121, 4122}, "3 vhost-net workers (kthread) for 2 queue pairs", "", "qemu (vhost kthreads apart)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fp := proc.NewFakeProc(t.TempDir())
			tc.setup(fp)
			if err := fp.Err(); err != nil {
				t.Fatal(err)
			}
			w := qemu.FindVhostWorkers(fp.FS(), pid)
			got, warn, err := vhostNet(w, pid, tc.queues, tc.vsock, tc.pinned)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
			} else if err != nil || !slices.Equal(got, tc.want) || (tc.warn == "") != (warn == "") || !strings.Contains(warn, tc.warn) {
				t.Errorf("vhostNet = %v, %q, %v; want %v, %q", got, warn, err, tc.want, tc.warn)
			}
			if l := qemuTargetLabel("tap+vhost", w); l != tc.label {
				t.Errorf("qemu target = %q, want %q", l, tc.label)
			}
			if l := qemuTargetLabel("tap", w); l != "qemu" {
				t.Errorf("qemu target of a plain tap = %q", l)
			}
		})
	}
}
