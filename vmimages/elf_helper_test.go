package vmimages

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
)

// fakeModule returns a minimal ELF64 relocatable object whose only content
// is a .modinfo section, enough for modinfo().
func fakeModule(modinfo string) []byte {
	shstr := "\x00.modinfo\x00.shstrtab\x00"
	const ehsize, shentsize = 64, 64
	infoOff := uint64(ehsize)
	strOff := infoOff + uint64(len(modinfo))
	shOff := (strOff + uint64(len(shstr)) + 7) &^ 7
	var b bytes.Buffer
	le := binary.LittleEndian
	hdr := elf.Header64{
		Type: uint16(elf.ET_REL), Machine: uint16(elf.EM_X86_64), Version: 1,
		Shoff: shOff, Ehsize: ehsize, Shentsize: shentsize, Shnum: 3, Shstrndx: 2,
	}
	copy(hdr.Ident[:], "\x7fELF")
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = 1
	binary.Write(&b, le, hdr)
	b.WriteString(modinfo)
	b.WriteString(shstr)
	for uint64(b.Len()) < shOff {
		b.WriteByte(0)
	}
	binary.Write(&b, le, elf.Section64{})
	binary.Write(&b, le, elf.Section64{Name: 1, Type: uint32(elf.SHT_PROGBITS), Off: infoOff, Size: uint64(len(modinfo)), Addralign: 1})
	binary.Write(&b, le, elf.Section64{Name: 10, Type: uint32(elf.SHT_STRTAB), Off: strOff, Size: uint64(len(shstr)), Addralign: 1})
	return b.Bytes()
}
