package vmimages

// What identifies a built module: its .modinfo fields and its GNU build
// ID, as the kernel shows them in /sys/module/NAME once it is loaded.

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
)

// ModuleID identifies a module file: its name, srcversion, vermagic, the
// modules it depends on, its GNU build ID (hex) and the file's SHA-256.
type ModuleID struct {
	Name       string `json:"name"`
	File       string `json:"file"`
	SrcVersion string `json:"srcversion,omitempty"`
	BuildID    string `json:"build_id,omitempty"`
	SHA256     string `json:"sha256"`
	Vermagic   string `json:"vermagic,omitempty"`
	Depends    string `json:"depends,omitempty"`
}

// ReadModuleID reads a .ko file's identity.
func ReadModuleID(path string) (*ModuleID, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sum := sha256.Sum256(data)
	id := &ModuleID{File: path, SHA256: hex.EncodeToString(sum[:])}
	if s := f.Section(".modinfo"); s != nil {
		mi, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("%s: .modinfo: %w", path, err)
		}
		for _, kv := range bytes.Split(mi, []byte{0}) {
			k, v, _ := strings.Cut(string(kv), "=")
			switch k {
			case "name":
				id.Name = v
			case "srcversion":
				id.SrcVersion = v
			case "vermagic":
				id.Vermagic = v
			case "depends":
				id.Depends = v
			}
		}
	}
	if id.Name == "" {
		return nil, fmt.Errorf("%s: no name= in .modinfo: not a kernel module", path)
	}
	if s := f.Section(".note.gnu.build-id"); s != nil {
		r := s.Open()
		id.BuildID, _ = NoteBuildID(r)
	}
	return id, nil
}

// NoteBuildID reads the GNU build ID from an ELF note section's bytes (the
// section of a module file, or /sys/module/NAME/notes/.note.gnu.build-id
// of a loaded one).
func NoteBuildID(r io.Reader) (string, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	for len(b) >= 12 {
		nsz := binary.LittleEndian.Uint32(b[0:])
		dsz := binary.LittleEndian.Uint32(b[4:])
		typ := binary.LittleEndian.Uint32(b[8:])
		name := align4(int(nsz))
		if 12+name+int(dsz) > len(b) {
			break
		}
		if typ == 3 && nsz == 4 && string(b[12:15]) == "GNU" { // NT_GNU_BUILD_ID
			return hex.EncodeToString(b[12+name : 12+name+int(dsz)]), nil
		}
		b = b[min(12+name+align4(int(dsz)), len(b)):]
	}
	return "", fmt.Errorf("no GNU build ID note")
}
