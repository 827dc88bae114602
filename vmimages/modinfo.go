package vmimages

// What identifies a built module: its .modinfo fields and its GNU build
// ID, as the kernel shows them in /sys/module/NAME once it is loaded.

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/vnetbench/vnetbench/vmimages/vminit"
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
		if b, err := s.Data(); err == nil {
			id.BuildID, _ = vminit.NoteBuildID(b)
		}
	}
	return id, nil
}
