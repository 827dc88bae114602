package vmimages

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// libDirs is the default search path of the dynamic linker on Debian amd64
// (what /etc/ld.so.conf.d lists plus the built-in directories).
var libDirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib",
}

// SharedLibs returns, like ldd, the files a dynamically linked program
// needs at run time: its ELF interpreter and every DT_NEEDED library,
// transitively, found through DT_RUNPATH/DT_RPATH and the default
// directories. Paths are the ones the loader opens (symlinks not resolved),
// sorted by discovery. A static program returns nil.
func SharedLibs(bin string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	queue := []string{bin}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		f, err := elf.Open(p)
		if err != nil {
			return nil, fmt.Errorf("read ELF %s: %w", p, err)
		}
		if p == bin {
			for _, prog := range f.Progs {
				if prog.Type == elf.PT_INTERP {
					b := make([]byte, prog.Filesz)
					if _, err := prog.ReadAt(b, 0); err != nil {
						f.Close()
						return nil, fmt.Errorf("%s: read interpreter: %w", p, err)
					}
					interp := strings.TrimRight(string(b), "\x00")
					seen[interp] = true
					out = append(out, interp)
				}
			}
		}
		needed, _ := f.DynString(elf.DT_NEEDED)
		var dirs []string
		for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
			rp, _ := f.DynString(tag)
			for _, r := range rp {
				for _, d := range strings.Split(r, ":") {
					dirs = append(dirs, strings.ReplaceAll(d, "$ORIGIN", filepath.Dir(p)))
				}
			}
		}
		f.Close()
		dirs = append(dirs, libDirs...)
		for _, n := range needed {
			path := ""
			if strings.Contains(n, "/") {
				path = n
			} else {
				for _, d := range dirs {
					if c := filepath.Join(d, n); isFile(c) {
						path = c
						break
					}
				}
			}
			if path == "" {
				return nil, inputErrorf(nil, "%s needs %s, which is not in %s; install the library's package", p, n, strings.Join(libDirs, ":"))
			}
			if seen[path] || seen[filepath.Base(path)] {
				continue
			}
			seen[path], seen[filepath.Base(path)] = true, true
			out = append(out, path)
			queue = append(queue, path)
		}
	}
	return out, nil
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
