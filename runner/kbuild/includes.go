package kbuild

// Which sources may include a header: a textual scan of a tree's #include
// lines, a superset of the truth (conditions ignored, names matched by
// their last element), which kbuild's dependency files then settle.

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/vnetbench/vnetbench/internal/lazyre"
)

// skipDirs are top-level directories of a kernel tree whose files feed no
// x86 kernel object.
var skipDirs = map[string]bool{"Documentation": true, "tools": true, "samples": true, "scripts": true, "usr": true, "LICENSES": true}

// Feeds reports whether a tree-relative path can feed an x86 kernel
// build: not documentation, tools, samples or another architecture.
func Feeds(rel string) bool {
	top, rest, _ := strings.Cut(rel, "/")
	if rest == "" { // a top-level file: Makefile and Kbuild feed the build
		return top == "Makefile" || top == "Kbuild" || top == "Kconfig"
	}
	if skipDirs[top] {
		return false
	}
	if top == "arch" {
		a, _, _ := strings.Cut(rest, "/")
		return a == "x86"
	}
	return true
}

var includeRe = lazyre.New(`^\s*#\s*include\s*([<"])([^>"]+)[>"]`)

// includeIndex maps a header to the tree-relative C sources and headers
// whose #include lines name it: by its tree-relative path where the name
// resolves in the tree (next to the includer for "x.h", else the first of
// includeRoots that has it; asm/ also asm-generic's), else by "?" and the
// name's last element (a directory from a Makefile's -I: any header of
// that name may be it).
type includeIndex map[string][]string

// includeRoots are where <x/y.h> resolves in an x86 build, in kbuild's
// -I order: the first that has it is the one the compiler reads.
var includeRoots = []string{"arch/x86/include", "include", "arch/x86/include/uapi", "include/uapi"}

// scanIncludes reads the #include lines of every .c, .h and .S file of
// tree that Feeds an x86 build, in parallel.
func scanIncludes(tree string) (includeIndex, error) {
	var files []string
	headers := map[string]bool{}
	err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tree, p)
		if d.IsDir() {
			if rel != "." && !Feeds(rel+"/x") {
				return filepath.SkipDir
			}
			return nil
		}
		switch path.Ext(rel) {
		case ".h":
			headers[rel] = true
			files = append(files, rel)
		case ".c", ".S":
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ix := includeIndex{}
	var mu sync.Mutex
	work := make(chan string)
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rel := range work {
				keys := resolveIncludes(rel, fileIncludes(filepath.Join(tree, rel)), headers)
				mu.Lock()
				for _, k := range keys {
					ix[k] = append(ix[k], rel)
				}
				mu.Unlock()
			}
		}()
	}
	for _, f := range files {
		work <- f
	}
	close(work)
	wg.Wait()
	return ix, nil
}

// resolveIncludes turns the includes of file rel (each "<name" or
// "\"name") into index keys.
func resolveIncludes(rel string, incs []string, headers map[string]bool) []string {
	var out []string
	add := func(k string) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	for _, inc := range incs {
		kind, name := inc[:1], inc[1:]
		found := false
		try := func(p string) {
			if p = path.Clean(p); headers[p] {
				add(p)
				found = true
			}
		}
		if kind == `"` {
			try(path.Join(path.Dir(rel), name))
		}
		for _, r := range includeRoots {
			if !found {
				try(r + "/" + name)
			}
		}
		if rest, ok := strings.CutPrefix(name, "asm/"); ok && !found {
			// arch/x86/include/generated/asm/ wraps asm-generic's.
			try("include/asm-generic/" + rest)
			try("include/uapi/asm-generic/" + rest)
		}
		if !found {
			add("?" + path.Base(name))
		}
	}
	return out
}

// fileIncludes lists the names a file #includes, each once, with the
// kind of its quotes first ("<linux/skbuff.h", "\"vhost.h").
func fileIncludes(p string) []string {
	b, err := os.ReadFile(p)
	if err != nil || !bytes.Contains(b, []byte("include")) {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		l := sc.Bytes()
		if !bytes.Contains(l, []byte("include")) {
			continue
		}
		if m := includeRe().FindSubmatch(l); m != nil {
			if n := string(m[1]) + string(m[2]); !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// direct lists the files that name header h (tree-relative) in an
// #include: resolved to it, or unresolved with its last element.
func (ix includeIndex) direct(h string) []string {
	return append(slices.Clone(ix[h]), ix["?"+path.Base(h)]...)
}

// includers returns the C and assembly sources that may include any of
// headers (tree-relative), directly or through other headers, sorted.
func (ix includeIndex) includers(headers []string) []string {
	seen := map[string]bool{}
	queue := slices.Clone(headers)
	for _, h := range headers {
		seen[h] = true
	}
	srcs := map[string]bool{}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		for _, f := range ix.direct(h) {
			if !strings.HasSuffix(f, ".h") {
				srcs[f] = true
			} else if !seen[f] {
				seen[f] = true
				queue = append(queue, f)
			}
		}
	}
	out := make([]string, 0, len(srcs))
	for f := range srcs {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// chain says how the first of headers reaches many sources: through the
// header of its closure that the most files include, as a path of
// includes that resolve to those headers ("through
// include/net/page_pool.h, then include/linux/skbuff.h, which 3,000
// files include").
func (ix includeIndex) chain(headers []string) string {
	if len(headers) == 0 {
		return ""
	}
	start := headers[0]
	from := map[string]string{start: ""}
	queue := []string{start}
	best, bestN := start, len(ix[start])
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		for _, f := range ix[h] {
			if _, ok := from[f]; ok || !strings.HasSuffix(f, ".h") {
				continue
			}
			from[f] = h
			queue = append(queue, f)
			if n := len(ix[f]); n > bestN {
				best, bestN = f, n
			}
		}
	}
	var steps []string
	for h := best; h != start; h = from[h] {
		steps = append([]string{h}, steps...)
	}
	if len(steps) == 0 {
		return fmt.Sprintf("%d files include it directly", bestN)
	}
	return fmt.Sprintf("through %s, which %d files include", strings.Join(steps, ", then "), bestN)
}
