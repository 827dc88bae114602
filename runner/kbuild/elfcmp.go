package kbuild

// Two compilations of one object compared by what the kernel runs: the
// contents of their allocated sections (text, data, read-only data, the
// kernel's tables) and the relocations applied to them.

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"slices"
)

// sameCode compares the relocatable objects a and b; "" when their
// allocated sections and relocations are the same, else what differs.
// Debug information, the symbol table's order and comments are left out.
func sameCode(a, b string) (string, error) {
	fa, err := elf.Open(a)
	if err != nil {
		return "", err
	}
	defer fa.Close()
	fb, err := elf.Open(b)
	if err != nil {
		return "", err
	}
	defer fb.Close()
	sa, err := allocSections(fa)
	if err != nil {
		return "", fmt.Errorf("%s: %w", a, err)
	}
	sb, err := allocSections(fb)
	if err != nil {
		return "", fmt.Errorf("%s: %w", b, err)
	}
	for _, name := range sectionNames(sa, sb) {
		x, okx := sa[name]
		y, oky := sb[name]
		switch {
		case !okx || !oky:
			return fmt.Sprintf("section %s only in one", name), nil
		case !bytes.Equal(x.data, y.data):
			return fmt.Sprintf("%s differs", name), nil
		case !slices.Equal(x.relocs, y.relocs):
			return fmt.Sprintf("relocations of %s differ", name), nil
		}
	}
	return "", nil
}

// section is an allocated section's contents (for NOBITS its size) and
// its relocations, each "offset type symbol addend".
type section struct {
	data   []byte
	relocs []string
}

func sectionNames(a, b map[string]*section) []string {
	var out []string
	for n := range a {
		out = append(out, n)
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// allocSections reads f's allocated sections by name (a repeated name
// gets "#2", ... in file order) with their relocations.
func allocSections(f *elf.File) (map[string]*section, error) {
	syms, err := f.Symbols()
	if err != nil && err != elf.ErrNoSymbols {
		return nil, err
	}
	out := map[string]*section{}
	keys := make([]string, len(f.Sections))
	for i, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		k := s.Name
		for n := 2; out[k] != nil; n++ {
			k = fmt.Sprintf("%s#%d", s.Name, n)
		}
		sec := &section{}
		if s.Type == elf.SHT_NOBITS {
			sec.data = binary.LittleEndian.AppendUint64(nil, s.Size)
		} else if sec.data, err = s.Data(); err != nil {
			return nil, fmt.Errorf("section %s: %w", s.Name, err)
		}
		out[k], keys[i] = sec, k
	}
	for _, r := range f.Sections {
		if r.Type != elf.SHT_RELA || int(r.Info) >= len(keys) || keys[r.Info] == "" {
			continue
		}
		data, err := r.Data()
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", r.Name, err)
		}
		for off := 0; off+24 <= len(data); off += 24 {
			o := binary.LittleEndian.Uint64(data[off:])
			info := binary.LittleEndian.Uint64(data[off+8:])
			add := int64(binary.LittleEndian.Uint64(data[off+16:]))
			out[keys[r.Info]].relocs = append(out[keys[r.Info]].relocs, fmt.Sprintf("%d %d %s %d", o, uint32(info), symName(f, syms, int(info>>32)), add))
		}
	}
	return out, nil
}

// symName is relocation symbol i's name; a section symbol is named by
// its section.
func symName(f *elf.File, syms []elf.Symbol, i int) string {
	if i <= 0 || i > len(syms) {
		return fmt.Sprintf("#%d", i)
	}
	s := syms[i-1]
	if elf.ST_TYPE(s.Info) == elf.STT_SECTION && int(s.Section) < len(f.Sections) {
		return "section " + f.Sections[s.Section].Name
	}
	return s.Name
}
