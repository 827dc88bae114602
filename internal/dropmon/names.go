package dropmon

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/vnetbench/vnetbench/internal/lazyre"
)

// Names turns the map's keys into what people read: drop reasons by
// name, return addresses by the function they lie in.
type Names struct {
	reasons map[uint32]string
	syms    []ksym // text symbols by address
	cache   map[uint64]string
}

type ksym struct {
	addr uint64
	name string
}

// formatPaths are where the tracepoint's format file is (tracefs, or
// tracefs under debugfs).
var formatPaths = []string{
	"/sys/kernel/tracing/events/skb/kfree_skb/format",
	"/sys/kernel/debug/tracing/events/skb/kfree_skb/format",
}

// LoadNames reads the running kernel's names: its drop reasons from the
// tracepoint's format file (tracefs mounted), else from its BTF; its
// functions from /proc/kallsyms (root sees the addresses).
func LoadNames() (*Names, error) {
	var reasons map[uint32]string
	var errs []error
	for _, p := range formatPaths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		reasons, err = ParseFormat(f)
		f.Close()
		if err == nil {
			break
		}
		errs = append(errs, fmt.Errorf("%s: %w", p, err))
	}
	if reasons == nil {
		r, err := btfReasons()
		if err != nil {
			errs = append(errs, err)
			return nil, fmt.Errorf("drop reasons: no names for them: %w", errors.Join(errs...))
		}
		reasons = r
	}
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return nil, fmt.Errorf("drop reasons: %w", err)
	}
	defer f.Close()
	syms, err := ParseKallsyms(f)
	if err != nil {
		return nil, fmt.Errorf("drop reasons: /proc/kallsyms: %w", err)
	}
	return NewNames(reasons, syms), nil
}

// NewNames makes Names from parsed reasons and kallsyms.
func NewNames(reasons map[uint32]string, syms []ksym) *Names {
	return &Names{reasons: reasons, syms: syms, cache: map[uint64]string{}}
}

// btfReasons reads enum skb_drop_reason from the kernel's BTF.
func btfReasons() (map[uint32]string, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("kernel BTF: %w", err)
	}
	var e *btf.Enum
	if err := spec.TypeByName("skb_drop_reason", &e); err != nil {
		return nil, fmt.Errorf("kernel BTF: enum skb_drop_reason: %w", err)
	}
	out := map[uint32]string{}
	for _, v := range e.Values {
		out[uint32(v.Value)] = strings.TrimPrefix(v.Name, "SKB_DROP_REASON_")
	}
	return out, nil
}

// symbolicRE matches one "{ 80, "FULL_RING" }" of __print_symbolic.
var symbolicRE = lazyre.New(`\{\s*(\d+|0x[0-9a-fA-F]+)\s*,\s*"([^"]*)"\s*\}`)

// ParseFormat reads the drop reasons' names from skb:kfree_skb's format
// file: its print fmt's __print_symbolic(REC->reason, { 2,
// "NOT_SPECIFIED" }, ...) (the kernel writes the enum's values as numbers).
func ParseFormat(r io.Reader) (map[uint32]string, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	_, rest, ok := strings.Cut(string(b), "__print_symbolic(REC->reason")
	if !ok {
		return nil, errors.New("no __print_symbolic(REC->reason, ...) in the print fmt")
	}
	out := map[uint32]string{}
	for _, m := range symbolicRE().FindAllStringSubmatch(rest, -1) {
		v, err := strconv.ParseUint(m[1], 0, 32)
		if err != nil {
			continue
		}
		out[uint32(v)] = m[2]
	}
	if len(out) == 0 {
		return nil, errors.New("no numbered reasons in __print_symbolic(REC->reason, ...)")
	}
	return out, nil
}

// ParseKallsyms reads the text symbols of /proc/kallsyms ("ADDR T name"
// or "ADDR t name\t[module]"), sorted by address. Addresses all 0 (a
// reader without the right to see them) are an error.
func ParseKallsyms(r io.Reader) ([]ksym, error) {
	var syms []ksym
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	nonzero := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || (f[1] != "T" && f[1] != "t") {
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			continue
		}
		nonzero = nonzero || a != 0
		name := f[2]
		if len(f) > 3 {
			name += " " + f[3]
		}
		syms = append(syms, ksym{a, name})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !nonzero {
		return nil, errors.New("no text symbol addresses (kernel.kptr_restrict hides them from this reader)")
	}
	slices.SortFunc(syms, func(a, b ksym) int { return cmp.Compare(a.addr, b.addr) })
	return syms, nil
}

// Func names the function addr lies in, without the compiler's suffixes
// (tun_net_xmit.cold is tun_net_xmit) and without its module (a row is the
// same whether tun is built in or a module); an address before every
// symbol is its hex.
func (n *Names) Func(addr uint64) string {
	if s, ok := n.cache[addr]; ok {
		return s
	}
	i, found := slices.BinarySearchFunc(n.syms, addr, func(s ksym, a uint64) int { return cmp.Compare(s.addr, a) })
	if !found {
		i--
	}
	s := fmt.Sprintf("%#x", addr)
	if i >= 0 && addr != 0 {
		name, _, _ := strings.Cut(n.syms[i].name, " ")
		if j := strings.IndexByte(name, '.'); j > 0 {
			name = name[:j]
		}
		s = name
	}
	n.cache[addr] = s
	return s
}

// Reason names a drop reason ("FULL_RING"); one the kernel did not name
// is its number ("reason 131072").
func (n *Names) Reason(v uint32) string {
	if s, ok := n.reasons[v]; ok {
		return s
	}
	return "reason " + strconv.FormatUint(uint64(v), 10)
}

// Counts names a snapshot: drops by "REASON@function" (Key), the counts
// of addresses in one function added up.
func (n *Names) Counts(snap map[Key]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(snap))
	for k, v := range snap {
		out[RowKey(n.Reason(k.Reason), n.Func(k.Addr))] += v
	}
	return out
}

// RowKey is the key of drops of reason in function fn: "FULL_RING@tun_net_xmit".
func RowKey(reason, fn string) string { return reason + "@" + fn }

// SplitRowKey splits a RowKey.
func SplitRowKey(k string) (reason, fn string) {
	reason, fn, _ = strings.Cut(k, "@")
	return reason, fn
}
