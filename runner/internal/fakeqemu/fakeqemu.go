// Package fakeqemu plays QEMU for tests: an Executor whose Start serves
// QMP on the socket named in QEMU's argv and writes a scripted console
// (protocol events, kernel messages) into the console log file, so that
// the code following a VM's console (lab mode, the runner) is tested
// without booting anything. It also writes the fake kernel image and
// modules directory a lab needs.
package fakeqemu

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/vmimages"
)

// Step is one console line, written After the previous one; PowerOff
// ends the VM (QEMU exits 0) instead of writing a line.
type Step struct {
	After    time.Duration
	Line     string
	PowerOff bool
}

// Exec is a proc.Executor that starts fake QEMUs. Script returns the
// console of the VM named by QEMU's -name (e.g. "vnb-lab-stock").
type Exec struct {
	Script func(name string) []Step
	// NoKVM makes a QEMU started with -accel kvm exit at once, as QEMU
	// does when it cannot use /dev/kvm ("Could not access KVM kernel
	// module").
	NoKVM bool
	// NoResume makes every cont after a QMP migrate fail as QEMU's does
	// in its finish-migrate run state ("Migration is not finalized
	// yet"): a saved guest that stays stopped.
	NoResume bool

	mu    sync.Mutex
	procs []*Proc
}

// Procs returns the fake QEMUs started so far.
func (e *Exec) Procs() []*Proc {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*Proc(nil), e.procs...)
}

// Run refuses: fake QEMU only starts.
func (e *Exec) Run(ctx context.Context, c proc.Cmd) ([]byte, error) {
	return nil, fmt.Errorf("fakeqemu: cannot run %v", c.Argv)
}

// Start starts a fake QEMU for argv (QEMU's).
func (e *Exec) Start(ctx context.Context, c proc.Cmd) (proc.Process, error) {
	name, qmp, console := parse(c.Argv)
	if qmp == "" || console == "" {
		return nil, fmt.Errorf("fakeqemu: argv without a QMP socket or a console file: %v", c.Argv)
	}
	kvm := accel(c.Argv) == "kvm"
	if kvm && e.NoKVM {
		p := &Proc{Name: name, Argv: c.Argv, done: make(chan struct{})}
		e.mu.Lock()
		p.pid = 900000 + len(e.procs)
		e.procs = append(e.procs, p)
		e.mu.Unlock()
		p.finish(errors.New("exit status 1 (qemu-system-x86_64: -accel kvm: Could not access KVM kernel module: No such file or directory)"))
		return p, nil
	}
	l, err := net.Listen("unix", qmp)
	if err != nil {
		return nil, err
	}
	f, err := os.Create(console)
	if err != nil {
		l.Close()
		return nil, err
	}
	p := &Proc{Name: name, Argv: c.Argv, KVM: kvm, noResume: e.NoResume, done: make(chan struct{}), l: l}
	e.mu.Lock()
	p.pid = 900000 + len(e.procs)
	e.procs = append(e.procs, p)
	e.mu.Unlock()
	go p.serveQMP()
	go func() {
		defer f.Close()
		for _, s := range e.Script(name) {
			select {
			case <-time.After(s.After):
			case <-p.done:
				return
			}
			if !p.running() {
				return
			}
			if s.PowerOff {
				p.finish(nil)
				return
			}
			fmt.Fprintln(f, s.Line)
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			p.finish(errors.New("killed"))
		case <-p.done:
		}
	}()
	return p, nil
}

// parse returns -name's VM name, the QMP socket and the console file.
func parse(argv []string) (name, qmp, console string) {
	for i := 0; i+1 < len(argv); i++ {
		v := strings.ReplaceAll(argv[i+1], ",,", "\x00")
		opts := strings.Split(v, ",")
		for j := range opts {
			opts[j] = strings.ReplaceAll(opts[j], "\x00", ",")
		}
		switch argv[i] {
		case "-name":
			name = opts[0]
		case "-chardev":
			path := ""
			for _, o := range opts {
				if p, ok := strings.CutPrefix(o, "path="); ok {
					path = p
				}
			}
			switch {
			case opts[0] == "socket" && strings.Contains(v, "id=qmp"):
				qmp = path
			case opts[0] == "file" && strings.Contains(v, "id=console"):
				console = path
			}
		}
	}
	return name, qmp, console
}

// accel is -accel's accelerator in argv ("" = none).
func accel(argv []string) string {
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == "-accel" {
			a, _, _ := strings.Cut(argv[i+1], ",")
			return a
		}
	}
	return ""
}

// Proc is a fake QEMU.
type Proc struct {
	Name string
	Argv []string // QEMU's argv
	KVM  bool     // started with -accel kvm: query-kvm says enabled
	pid  int
	// noResume refuses cont after a migrate (Exec.NoResume).
	noResume bool
	l        net.Listener
	// vcpu is the thread playing vCPU 0 (vcpuThread).
	vcpuOnce sync.Once
	vcpu     int
	once     sync.Once
	done     chan struct{}
	err      error

	mu     sync.Mutex
	killed bool // got a signal or QMP quit
	qmp    []string
	// migrated is the last migration's status and error (migrate).
	migrated, migrateErr string
	// paused is set by QMP stop and closed by cont: the console script
	// stands still meanwhile, as a stopped VM's does.
	paused chan struct{}
}

// QMP returns the QMP commands the fake QEMU got, in order.
func (p *Proc) QMP() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.qmp...)
}

// Paused reports whether the VM is stopped (QMP stop without cont).
func (p *Proc) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused != nil
}

// command records a QMP command and plays stop and cont.
func (p *Proc) command(cmd string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.qmp = append(p.qmp, cmd)
	switch {
	case cmd == "stop" && p.paused == nil:
		p.paused = make(chan struct{})
	case cmd == "cont" && p.paused != nil && !p.refusesContLocked():
		close(p.paused)
		p.paused = nil
	}
}

// refusesCont reports whether a cont is refused now (Exec.NoResume).
func (p *Proc) refusesCont() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refusesContLocked()
}

func (p *Proc) refusesContLocked() bool {
	return p.noResume && slices.Contains(p.qmp, "migrate")
}

// running waits while the VM is stopped; false when it ended.
func (p *Proc) running() bool {
	p.mu.Lock()
	ch := p.paused
	p.mu.Unlock()
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-p.done:
		return false
	}
}

// vcpuThread returns the id of an OS thread that exits when p ends.
func (p *Proc) vcpuThread() int {
	p.vcpuOnce.Do(func() {
		tid := make(chan int)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
			tid <- syscall.Gettid()
			<-p.done
		}()
		p.vcpu = <-tid
	})
	return p.vcpu
}

func (p *Proc) finish(err error) {
	p.once.Do(func() {
		p.err = err
		if p.l != nil {
			p.l.Close()
		}
		close(p.done)
	})
}

// Killed reports whether the VM was stopped by the harness (signal or
// QMP quit) rather than powering off by itself.
func (p *Proc) Killed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed
}

func (p *Proc) serveQMP() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			c.Write([]byte(`{"QMP": {"version": {}, "capabilities": []}}` + "\n"))
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				var req struct {
					Execute   string
					Arguments struct{ URI string }
				}
				json.Unmarshal(sc.Bytes(), &req)
				p.command(req.Execute)
				switch req.Execute {
				case "migrate", "migrate-incoming":
					p.migrate(req.Execute, req.Arguments.URI)
					c.Write([]byte(`{"return": {}}` + "\n"))
				case "cont":
					if p.refusesCont() {
						c.Write([]byte(`{"error": {"class": "GenericError", "desc": "Migration is not finalized yet"}}` + "\n"))
						continue
					}
					c.Write([]byte(`{"return": {}}` + "\n"))
				case "query-migrate":
					st, why := p.migration()
					fmt.Fprintf(c, `{"return": {"status": %q, "error-desc": %q}}`+"\n", st, why)
				case "query-kvm":
					fmt.Fprintf(c, `{"return": {"enabled": %v, "present": true}}`+"\n", p.KVM)
				case "query-cpus-fast":
					// One vCPU, played by a thread of the test process that
					// lives as long as the fake QEMU (affinity calls on it
					// work and end with it).
					fmt.Fprintf(c, `{"return": [{"cpu-index": 0, "thread-id": %d}]}`+"\n", p.vcpuThread())
				default:
					c.Write([]byte(`{"return": {}}` + "\n"))
				}
				if req.Execute == "quit" {
					p.mu.Lock()
					p.killed = true
					p.mu.Unlock()
					p.finish(nil)
					return
				}
			}
		}()
	}
}

func (p *Proc) Pid() int { return p.pid }
func (p *Proc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	p.finish(fmt.Errorf("signal: %v", sig))
	return nil
}
func (p *Proc) Wait() error              { <-p.done; return p.err }
func (p *Proc) Done() <-chan struct{}    { return p.done }
func (p *Proc) Output() (string, string) { return "", "" }
func (p *Proc) Stop(sig syscall.Signal, _ time.Duration) error {
	p.Signal(sig)
	return p.Wait()
}

// LabEvent is the console line lab init prints for ev
// (vmimages.EncodeConsoleEvent, without its newlines).
func LabEvent(ev vmimages.Event) string {
	b, err := vmimages.EncodeConsoleEvent(ev)
	if err != nil {
		panic(err) // a test's event that JSON cannot hold (a NaN uptime)
	}
	return strings.TrimSpace(string(b))
}

// Kernel writes a fake bzImage (a setup header with version string
// release) and a modules directory in which every module a lab loads is
// built in, and returns their paths.
func Kernel(dir, release string) (image, modules string, err error) {
	b := make([]byte, 0x1000)
	copy(b[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(b[0x20e:], 0x400)
	copy(b[0x600:], release+" (fake@vnetbench) #1 SMP\x00")
	image = filepath.Join(dir, "vmlinuz-"+release)
	if err := os.WriteFile(image, b, 0o644); err != nil {
		return "", "", err
	}
	modules = filepath.Join(dir, "lib", "modules", release)
	ko := filepath.Join(modules, "kernel", "net", "core", "pktgen.ko")
	if err := os.MkdirAll(filepath.Dir(ko), 0o755); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(ko, []byte("not a module"), 0o644); err != nil {
		return "", "", err
	}
	var builtin strings.Builder
	for _, m := range []string{"drivers/virtio/virtio_pci", "drivers/char/virtio_console", "net/9p/9pnet_virtio", "net/9p/9pnet",
		"fs/9p/9p", "drivers/net/tun", "drivers/net/tap", "drivers/vhost/vhost_iotlb", "drivers/vhost/vhost",
		"drivers/vhost/vhost_net", "drivers/net/virtio_net"} {
		fmt.Fprintf(&builtin, "kernel/%s.ko\n", m)
	}
	files := map[string]string{"modules.dep": "kernel/net/core/pktgen.ko:\n", "modules.builtin": builtin.String()}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(modules, n), []byte(c), 0o644); err != nil {
			return "", "", err
		}
	}
	return image, modules, nil
}

// Lab writes what a lab run takes in dir: a kernel (Kernel) of release
// and the vnetbench binary (StaticELF, at dir/vnetbench). It fails tb
// when it cannot.
func Lab(tb testing.TB, dir, release string) (image, modules, bin string) {
	tb.Helper()
	image, modules, err := Kernel(dir, release)
	if err != nil {
		tb.Fatal(err)
	}
	bin = filepath.Join(dir, "vnetbench")
	if err := StaticELF(bin); err != nil {
		tb.Fatal(err)
	}
	return image, modules, bin
}

// StaticELF writes a minimal static x86-64 ELF header (no PT_INTERP): the
// lab takes it for a static vnetbench binary to put in the initramfs.
func StaticELF(path string) error {
	b := make([]byte, 64)
	copy(b, "\x7fELF\x02\x01\x01")
	b[16] = 2    // ET_EXEC
	b[18] = 0x3e // EM_X86_64
	b[20] = 1    // EV_CURRENT
	b[52] = 64   // e_ehsize
	return os.WriteFile(path, b, 0o755)
}

// State is what a fake QEMU's migrate writes as a guest's saved state,
// and what its migrate-incoming accepts: anything else fails to load.
const State = "fakeqemu guest state\n"

// StuckState is a saved state a fake QEMU's migrate-incoming starts to
// load and never completes (a load that hangs).
const StuckState = "fakeqemu stuck guest state\n"

// migrate plays QMP migrate (exec:cat > 'PATH': writes State to PATH) and
// migrate-incoming (exec:cat 'PATH': completes when PATH holds State,
// stays active when it holds StuckState).
func (p *Proc) migrate(cmd, uri string) {
	path := strings.Trim(strings.TrimPrefix(strings.TrimPrefix(uri, "exec:cat "), "> "), "'")
	status, err := "completed", error(nil)
	if cmd == "migrate" {
		err = os.WriteFile(path, []byte(State), 0o644)
	} else if b, rerr := os.ReadFile(path); rerr != nil {
		err = rerr
	} else if string(b) == StuckState {
		status = "active"
	} else if string(b) != State {
		err = errors.New("load of migration failed: Invalid argument")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.migrated, p.migrateErr = status, ""
	if err != nil {
		p.migrated, p.migrateErr = "failed", err.Error()
	}
}

// migration is the status and error query-migrate reports.
func (p *Proc) migration() (string, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.migrated, p.migrateErr
}
