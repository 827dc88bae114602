// Package ledger records every host resource a vnetbench process creates
// (network namespace, tap, qdisc, temporary directory, CPU affinity it
// changed, QEMU process), before it creates it, in a file of its own
// under Dir: the process's ledger, which names the process (pid, start
// time, boot) and the run. A resource carries the ledger's ID where the
// kernel lets it (a tap's ifalias, a marker file in a directory). When
// the process ends as it should, everything in its ledger is gone and the
// file with it; a process that was killed leaves its ledger behind, and
// 'vnetbench doctor' reads it (Scan): only what a ledger whose owner is
// gone lists is a leftover, never something found by its name.
//
// A reused pid does not pass for the owner: an owner is alive only while
// a process of its pid has its start time, in the same boot.
//
// The package records and reads ledgers, and removes no resource
// (runner's doctor code decides what is in use and removes the rest);
// of a dead owner's ledger it removes the file once it lists nothing.
package ledger

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/vnetbench/vnetbench/internal/safefs"
)

// Kinds of resources.
const (
	Netns = "netns" // Name: /run/netns/NAME; Ino: its nsfs inode
	Tap   = "tap"   // Name: ifname, Netns: the namespace it is in
	Qdisc = "qdisc" // Name: "DEV KIND", Netns: the namespace (goes with it)
	Dir   = "dir"   // Name: the path; a MarkerFile in it holds the ID
	Pin   = "pin"   // PID: the thread, Start: its start time, Mask: the affinity before
	VM    = "vm"    // Name: QEMU's -name, PID and Start: the process
)

// MarkerFile is the file a ledger's directory holds: the ledger's ID.
// It is safefs's OwnFile, the one file that proves a directory
// vnetbench's.
const MarkerFile = safefs.OwnFile

// AliasPrefix starts the ifalias of a tap a ledger recorded: the prefix
// and the ledger's ID.
const AliasPrefix = "vnetbench:"

// Owner is the process a ledger belongs to.
type Owner struct {
	ID    string   `json:"id"`
	Run   string   `json:"run,omitempty"`
	PID   int      `json:"pid"`
	Start uint64   `json:"start"` // /proc/PID/stat starttime, clock ticks since boot
	Boot  string   `json:"boot"`  // /proc/sys/kernel/random/boot_id
	Argv  []string `json:"argv,omitempty"`
}

// Entry is one resource.
type Entry struct {
	Seq   int    `json:"seq"`
	Kind  string `json:"kind"`
	Name  string `json:"name,omitempty"`
	Netns string `json:"netns,omitempty"`
	Ino   uint64 `json:"ino,omitempty"`
	PID   int    `json:"pid,omitempty"`
	Start uint64 `json:"start,omitempty"`
	Mask  string `json:"mask,omitempty"`
	// State: "intent" (recorded, maybe not made), "made", "gone".
	State string `json:"state"`
}

// line is one line of a ledger file: the owner (first) or an entry.
type line struct {
	Owner *Owner `json:"owner,omitempty"`
	*Entry
	RunID string `json:"set_run,omitempty"`
}

// DirEnv names the directory of the ledgers (tests; default Default).
const DirEnv = "VNETBENCH_LEDGER_DIR"

// Default is where ledgers live for root: /run is cleared at boot, as
// the namespaces and taps are.
const Default = "/run/vnetbench/ledger"

// Path is the directory of the ledgers: $VNETBENCH_LEDGER_DIR, else
// Default for root, else a directory of the user's in the temporary
// directory (a user who is not root creates no namespace or tap, only
// temporary directories).
func Path() string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return Default
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("vnetbench-ledger-%d", os.Geteuid()))
}

// Ledger is this process's ledger.
type Ledger struct {
	mu    sync.Mutex
	owner Owner
	dir   string
	f     *os.File
	seq   int
	live  map[int]*Entry // recorded, not gone
}

var (
	procMu sync.Mutex
	proc   *Ledger
)

// This is the process's ledger (made on first use; its file on the
// first Record).
func This() *Ledger {
	procMu.Lock()
	defer procMu.Unlock()
	if proc == nil {
		var b [5]byte
		rand.Read(b[:])
		start, _ := StartTime(os.Getpid())
		proc = &Ledger{owner: Owner{ID: "vnb" + hex.EncodeToString(b[:]), PID: os.Getpid(), Start: start, Boot: BootID(), Argv: os.Args},
			live: map[int]*Entry{}}
	}
	return proc
}

// ID is the process's ledger ID, which its taps and directories carry.
func ID() string { return This().owner.ID }

// SetRun names the run this process measures (doctor shows it).
func SetRun(run string) {
	l := This()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.owner.Run = run
	if l.f != nil {
		l.write(line{RunID: run})
	}
}

// Item is a recorded resource.
type Item struct {
	l   *Ledger
	seq int
}

// Record writes e to the process's ledger as intended, before the caller
// creates the resource; an error means it must not be created.
func Record(e Entry) (*Item, error) { return This().Record(e) }

// Record writes e as intended.
func (l *Ledger) Record(e Entry) (*Item, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		if err := l.open(); err != nil {
			return nil, fmt.Errorf("record %s %s in the ledger: %w", e.Kind, e.Name, err)
		}
	}
	l.seq++
	e.Seq, e.State = l.seq, "intent"
	if err := l.write(line{Entry: &e}); err != nil {
		return nil, fmt.Errorf("record %s %s in the ledger: %w", e.Kind, e.Name, err)
	}
	l.live[e.Seq] = &e
	return &Item{l: l, seq: e.Seq}, nil
}

// open creates the ledger's file (0600, a new one) with the owner line.
func (l *Ledger) open() error {
	l.dir = Path()
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(l.dir, l.owner.ID+".jsonl"), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	l.f = f
	o := l.owner
	return l.write(line{Owner: &o})
}

func (l *Ledger) write(ln line) error {
	b, err := json.Marshal(ln)
	if err != nil {
		return err
	}
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return err
	}
	return l.f.Sync()
}

// Made records what the resource turned out to be (a namespace's inode,
// a process's pid and start time); set edits the entry.
func (it *Item) Made(set func(e *Entry)) {
	if it == nil {
		return
	}
	l := it.l
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.live[it.seq]
	if e == nil || l.f == nil {
		return
	}
	if set != nil {
		set(e)
	}
	e.State = "made"
	c := *e
	l.write(line{Entry: &c})
}

// Gone records that the resource no longer exists (removed, or never
// made). When nothing the ledger recorded is left, its file goes.
func (it *Item) Gone() {
	if it == nil {
		return
	}
	it.l.gone(func(e *Entry) bool { return e.Seq == it.seq })
}

// GoneWithin records as gone what lived inside the namespace netns (its
// taps and qdiscs): deleting a namespace deletes them.
func GoneWithin(netns string) {
	This().gone(func(e *Entry) bool { return e.Netns == netns })
}

// GoneMatching records as gone every live entry match accepts.
func (l *Ledger) GoneMatching(match func(*Entry) bool) { l.gone(match) }

func (l *Ledger) gone(match func(*Entry) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	var seqs []int
	for s, e := range l.live {
		if match(e) {
			seqs = append(seqs, s)
		}
	}
	sort.Ints(seqs)
	for _, s := range seqs {
		l.write(line{Entry: &Entry{Seq: s, Kind: l.live[s].Kind, State: "gone"}})
		delete(l.live, s)
	}
	if len(l.live) == 0 {
		l.f.Close()
		os.Remove(filepath.Join(l.dir, l.owner.ID+".jsonl"))
		l.f = nil
	}
}

// ErrEnded: the process has ended and is not reaped yet (a zombie). It
// holds nothing (no files, no namespace), and it is not alive.
var ErrEnded = errors.New("the process has ended")

// StartTime is the start time of process (or thread) pid, in clock ticks
// after boot (/proc/PID/stat field 22); ErrEnded for a zombie.
func StartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, errors.New("malformed /proc stat")
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, ErrEnded
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// BootID is this boot's id.
func BootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// Alive reports whether the owner's process is still running: a process
// of its pid started when it did, in this boot.
func (o Owner) Alive() bool {
	if o.Boot != BootID() {
		return false
	}
	st, err := StartTime(o.PID)
	return err == nil && st == o.Start
}

// Orphan is what a ledger whose owner is gone still lists.
type Orphan struct {
	Owner Owner
	Entry Entry
	File  string // the ledger's file
}

// Settled is a ledger whose owner is gone and that lists nothing: each
// entry is recorded gone, but the owner ended before it removed the file
// (qemu.Launch records a QEMU's exit from a goroutine of its own). Only
// the file is left; RemoveSettled removes it.
type Settled struct {
	Owner Owner
	File  string
}

// Skipped is a file in the ledger directory that is no ledger Scan can
// read, and why; nothing reads or removes it.
type Skipped struct {
	File string
	Why  string
}

// Found is what Scan finds in a ledger directory.
type Found struct {
	// Orphans is what the ledgers of owners that are gone still list
	// (not recorded gone), in the order it was recorded.
	Orphans []Orphan
	Settled []Settled
	Skipped []Skipped
	Live    int // ledgers of running processes
}

// Scan reads the ledgers in dir (ID.jsonl, regular files; a link is not
// followed). This process's own ledger is not read. A line that is not
// a ledger line is passed over, but a ledger that has one is not
// Settled: it may be the line that recorded something made.
func Scan(dir string) (Found, error) {
	var fd Found
	d, err := safefs.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fd, nil
	}
	if err != nil {
		return fd, err
	}
	defer d.Close()
	ents, err := d.ReadDir(".")
	if err != nil {
		return fd, err
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	me := This().owner.ID
	for _, de := range ents {
		p, err := readEntry(d, de)
		if err != nil {
			fd.Skipped = append(fd.Skipped, Skipped{File: d.Join(de.Name()), Why: err.Error()})
			continue
		}
		switch o := p.owner; {
		case o.ID == me:
		case o.Alive():
			fd.Live++
		case len(p.live) > 0:
			for _, e := range p.live {
				fd.Orphans = append(fd.Orphans, Orphan{Owner: o, Entry: e, File: d.Join(de.Name())})
			}
		case p.badLine > 0:
			fd.Skipped = append(fd.Skipped, Skipped{File: d.Join(de.Name()), Why: fmt.Sprintf("line %d is no ledger line: not provably settled", p.badLine)})
		default:
			fd.Settled = append(fd.Settled, Settled{Owner: o, File: d.Join(de.Name())})
		}
	}
	return fd, nil
}

// readEntry reads directory entry de as a ledger: a regular file named
// after its owner's ID.
func readEntry(d *safefs.Dir, de fs.DirEntry) (parsed, error) {
	id, ok := strings.CutSuffix(de.Name(), ".jsonl")
	switch t := de.Type(); {
	case !ok:
		return parsed{}, errors.New("not a ledger's name (ID.jsonl)")
	case t&fs.ModeSymlink != 0:
		return parsed{}, errors.New("a symbolic link")
	case !t.IsRegular():
		return parsed{}, fmt.Errorf("not a regular file (a %v)", t)
	}
	p, err := readLedger(d, de.Name())
	if err == nil && p.owner.ID != id {
		err = fmt.Errorf("its owner line names ledger %s", p.owner.ID)
	}
	return p, err
}

// parsed is a ledger file as read: its owner, the entries not recorded
// gone, and the number of its first line that is no ledger line (0:
// none).
type parsed struct {
	owner   Owner
	live    []Entry
	badLine int
}

// readLedger reads ledger file name under d (no link followed, no FIFO
// opened).
func readLedger(d *safefs.Dir, name string) (parsed, error) {
	f, err := d.Open(name)
	if err != nil {
		return parsed{}, err
	}
	defer f.Close()
	var p parsed
	byseq := map[int]*Entry{}
	var order []int
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var ln line
		if json.Unmarshal(sc.Bytes(), &ln) != nil {
			if p.badLine == 0 {
				p.badLine = n
			}
			continue
		}
		switch {
		case ln.Owner != nil:
			p.owner = *ln.Owner
		case ln.RunID != "":
			p.owner.Run = ln.RunID
		case ln.Entry != nil && ln.State == "gone":
			delete(byseq, ln.Seq)
		case ln.Entry != nil:
			if _, ok := byseq[ln.Seq]; !ok {
				order = append(order, ln.Seq)
			}
			e := *ln.Entry
			byseq[ln.Seq] = &e
		}
	}
	if err := sc.Err(); err != nil {
		return p, err
	}
	if p.owner.ID == "" {
		return p, errors.New("no owner line")
	}
	for _, s := range order {
		if e, ok := byseq[s]; ok {
			p.live = append(p.live, *e)
		}
	}
	return p, nil
}

// openLedger opens the directory of ledger file path and reads it.
func openLedger(path string) (*safefs.Dir, parsed, error) {
	d, err := safefs.Open(filepath.Dir(path))
	if err != nil {
		return nil, parsed{}, err
	}
	p, err := readLedger(d, filepath.Base(path))
	if err != nil {
		d.Close()
		return nil, parsed{}, err
	}
	return d, p, nil
}

// Resolved records in a dead owner's ledger file that doctor removed e
// (or found it gone); when nothing is left the file goes.
func Resolved(o Orphan) error {
	f, err := os.OpenFile(o.File, os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	b, _ := json.Marshal(line{Entry: &Entry{Seq: o.Entry.Seq, Kind: o.Entry.Kind, State: "gone"}})
	_, err = f.Write(append(b, '\n'))
	f.Close()
	if d, p, rerr := openLedger(o.File); rerr == nil {
		if len(p.live) == 0 {
			d.RemoveAll(filepath.Base(o.File)) // a regular file, as read
		}
		d.Close()
	}
	return err
}

// RemoveSettled removes the file of a settled ledger after reading it
// again: still its owner's, who is still gone, and still listing
// nothing. No link is followed.
func RemoveSettled(s Settled) error {
	d, p, err := openLedger(s.File)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	switch {
	case p.owner.ID != s.Owner.ID:
		return fmt.Errorf("%s: its owner line names ledger %s now", s.File, p.owner.ID)
	case p.owner.Alive():
		return fmt.Errorf("%s: its owner, pid %d, runs", s.File, p.owner.PID)
	case len(p.live) > 0 || p.badLine > 0:
		return fmt.Errorf("%s: it is not settled now", s.File)
	}
	// The file read is a regular file (safefs.Dir.Open): RemoveAll
	// unlinks that name only.
	return d.RemoveAll(filepath.Base(s.File))
}

// MkdirTemp makes a new directory in the temporary directory, named
// PREFIX-RANDOM, recorded before it is made and marked with the ledger's
// ID (MarkerFile). remove removes it and records it gone.
func MkdirTemp(prefix string) (dir string, remove func() error, err error) {
	var b [6]byte
	rand.Read(b[:])
	dir = filepath.Join(os.TempDir(), prefix+"-"+hex.EncodeToString(b[:]))
	it, err := Record(Entry{Kind: Dir, Name: dir})
	if err != nil {
		return "", nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		it.Gone()
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, MarkerFile), []byte(ID()+"\n"), 0o600); err != nil {
		os.RemoveAll(dir)
		it.Gone()
		return "", nil, err
	}
	it.Made(nil)
	return dir, func() error {
		err := os.RemoveAll(dir)
		if err == nil {
			it.Gone()
		}
		return err
	}, nil
}
