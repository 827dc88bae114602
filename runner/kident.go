package runner

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// DatapathModules are the modules of the datapath under test whose
// identity env.json records; the workloads' modules (pktgen, vhost_vsock:
// workload.LabModules) are recorded too.
var DatapathModules = []string{"tun", "tap", "vhost_net"}

// identityModules are DatapathModules and the registered workloads'
// modules.
func identityModules() []string {
	out := slices.Clone(DatapathModules)
	for _, m := range workload.LabModules() {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// KernelIdentity reads what tells two builds of one release apart from a
// root ("/" on a host; a fake tree in tests): /proc/version, the hash of
// the kernel's config and each module's srcversion and build-id.
type KernelIdentity struct {
	Root    string // "" = "/"
	Release string // uname -r, to find /boot/config-RELEASE and modules.builtin
}

func (k KernelIdentity) path(p string) string {
	if k.Root == "" {
		return p
	}
	return filepath.Join(k.Root, p)
}

// Fill records the identity in e.
func (k KernelIdentity) Fill(e *results.Env) {
	e.ProcVersion = readTrim(k.path("/proc/version"))
	e.ConfigSHA256, e.ConfigSource = k.config()
	e.Modules = map[string]results.ModuleID{}
	builtin := k.builtin()
	for _, m := range identityModules() {
		e.Modules[m] = k.module(m, builtin)
	}
}

// config hashes /proc/config.gz (uncompressed: the text, as
// /boot/config-RELEASE holds it) or else /boot/config-RELEASE.
func (k KernelIdentity) config() (sum, source string) {
	if f, err := os.Open(k.path("/proc/config.gz")); err == nil {
		defer f.Close()
		if zr, err := gzip.NewReader(f); err == nil {
			h := sha256.New()
			if _, err := io.Copy(h, zr); err == nil {
				return hex.EncodeToString(h.Sum(nil)), "/proc/config.gz"
			}
		}
	}
	if k.Release == "" {
		return "", ""
	}
	p := "/boot/config-" + k.Release
	b, err := os.ReadFile(k.path(p))
	if err != nil {
		return "", ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), p
}

// builtin reads modules.builtin: the names of modules built into the
// kernel.
func (k KernelIdentity) builtin() map[string]bool {
	out := map[string]bool{}
	if k.Release == "" {
		return out
	}
	f, err := os.Open(k.path(filepath.Join("/lib/modules", k.Release, "modules.builtin")))
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name := strings.TrimSuffix(filepath.Base(strings.TrimSpace(sc.Text())), ".ko")
		out[strings.ReplaceAll(name, "-", "_")] = true
	}
	return out
}

func (k KernelIdentity) module(name string, builtin map[string]bool) results.ModuleID {
	dir := k.path(filepath.Join("/sys/module", name))
	if _, err := os.Stat(dir); err != nil {
		if builtin[name] {
			return results.ModuleID{State: "built-in"}
		}
		return results.ModuleID{State: "not loaded"}
	}
	// Only loadable modules have initstate ("live").
	if _, err := os.Stat(filepath.Join(dir, "initstate")); err != nil {
		return results.ModuleID{State: "built-in"}
	}
	id := results.ModuleID{State: "loaded", SrcVersion: readTrim(filepath.Join(dir, "srcversion"))}
	if b, err := os.ReadFile(filepath.Join(dir, "notes", ".note.gnu.build-id")); err == nil {
		id.BuildID = noteBuildID(b)
	}
	return id
}

// noteBuildID returns the GNU build-id (hex) of an ELF note section's
// bytes (namesz, descsz, type, "GNU\0", the id), "" when there is none.
func noteBuildID(b []byte) string {
	const ntGNUBuildID = 3
	for len(b) >= 12 {
		namesz := binary.LittleEndian.Uint32(b[0:4])
		descsz := binary.LittleEndian.Uint32(b[4:8])
		typ := binary.LittleEndian.Uint32(b[8:12])
		nameEnd := 12 + align4(namesz)
		descEnd := nameEnd + align4(descsz)
		if uint64(descEnd) > uint64(len(b)) || namesz > 1<<16 || descsz > 1<<16 {
			return ""
		}
		name := b[12 : 12+namesz]
		if typ == ntGNUBuildID && string(name) == "GNU\x00" {
			return hex.EncodeToString(b[nameEnd : nameEnd+descsz])
		}
		b = b[descEnd:]
	}
	return ""
}

func align4(n uint32) uint32 { return (n + 3) &^ 3 }
