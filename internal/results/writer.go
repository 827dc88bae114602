package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/safefs"
)

// Writer appends samples to a run directory's results.jsonl, one line and
// one fsync per sample, and makes the directories of the layout. It is safe
// for concurrent use.
type Writer struct {
	dir  string
	d    *safefs.Dir
	mu   sync.Mutex
	f    *os.File
	done map[Key]bool
	warn []string
}

// Create makes dir (and its artifacts/ subdirectory), writes env.json and
// an empty results.jsonl. It refuses a directory that is not empty (use
// Open to resume): nothing in it was written by this run.
func Create(dir string, env Env) (*Writer, error) {
	if err := CheckDir(dir, false); err != nil {
		return nil, err
	}
	d, err := safefs.MkdirAll(dir)
	if err != nil {
		return nil, fault.Input("create run directory %s: %w; choose a directory you may create for -o", dir, err)
	}
	return create(dir, d, env)
}

// CreateChosen is Create for the run directory vnetbench chose when no -o
// was given: rel (runs/NAME) under base (the working directory, the
// user's). rel is made as safefs.MkdirChosen makes it, following no link
// at any time: a link there is refused (bad input), as the check before
// the run refused it, never followed.
func CreateChosen(base, rel string, env Env) (*Writer, error) {
	dir := filepath.Join(base, rel)
	if err := CheckDir(dir, false); err != nil {
		return nil, err
	}
	d, err := safefs.MkdirChosen(base, rel, "give -o DIR")
	if err != nil {
		return nil, err
	}
	return create(dir, d, env)
}

// create writes a new run directory's artifacts/, env.json and empty
// results.jsonl in d, made at dir.
func create(dir string, d *safefs.Dir, env Env) (*Writer, error) {
	w := &Writer{dir: dir, d: d, done: map[Key]bool{}}
	if err := d.MkdirAll(ArtifactsDir); err != nil {
		d.Close()
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	if err := w.WriteEnv(env); err != nil {
		d.Close()
		return nil, err
	}
	f, err := d.Create(ResultsFile, 0o644)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("create results: %w", err)
	}
	w.f = f
	return w, nil
}

// CheckDir says whether dir can be a new run directory (resume false:
// absent, or an empty directory) or one to resume (it holds
// results.jsonl), as Create and Open would, without writing anything:
// run checks -o before its slow first steps (building kernels, booting
// lab VMs), so that a wrong -o is bad input at once, not after them.
// A dir that is itself a symbolic link is refused: vnetbench writes
// nothing through a link, and a link planted where a root-run job writes
// its runs would send them anywhere.
func CheckDir(dir string, resume bool) error {
	if li, err := os.Lstat(dir); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(dir)
		return fault.Input("run directory %s is a symbolic link (to %s); vnetbench writes nothing through a link: give -o the directory itself", dir, target)
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && resume:
		return fault.Input("run directory %s does not exist; --resume continues a run directory written by 'vnetbench run' (leave --resume out to start a new run)", dir)
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fault.Input("run directory %s: %v; choose another -o", dir, err)
	case !fi.IsDir():
		return fault.Input("run directory %s is a file, not a directory; choose a new or empty directory for -o", dir)
	}
	_, rerr := os.Lstat(filepath.Join(dir, ResultsFile))
	if resume {
		if rerr != nil {
			return fault.Input("%s: no %s; is this a run directory written by 'vnetbench run'?", dir, ResultsFile)
		}
		return nil
	}
	ents, err := os.ReadDir(dir)
	switch {
	case err != nil:
		return fault.Input("run directory %s: %v; choose another -o", dir, err)
	case len(ents) == 0:
		return nil
	case rerr == nil:
		return fault.Input("run directory %s already holds results; pass --resume to continue it or choose another -o", dir)
	}
	return fault.Input("run directory %s is not empty (it holds %s); choose a new or empty directory for -o", dir, ents[0].Name())
}

// Open opens an existing run directory for appending (resume). Samples
// already present are reported by Done. A torn last line (a
// crash mid-write) is cut off so the next Append starts a fresh line; a
// warning about it is returned by Warnings.
func Open(dir string) (w *Writer, err error) {
	if err := CheckDir(dir, true); err != nil {
		return nil, err
	}
	d, err := safefs.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open run: %w", err)
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	path := filepath.Join(dir, ResultsFile)
	data, err := d.ReadFile(ResultsFile, safefs.MaxResults)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fault.Input("%s: no %s; is this a run directory written by 'vnetbench run'?", dir, ResultsFile)
		}
		return nil, fmt.Errorf("open run: %w", err)
	}
	samples, good, warns, err := parseResults(path, data)
	if err != nil {
		return nil, err
	}
	w = &Writer{dir: dir, d: d, done: map[Key]bool{}, warn: warns}
	for i := range samples {
		if !samples[i].Warmup && samples[i].Error == "" {
			w.done[samples[i].key()] = true
		}
	}
	if err := d.MkdirAll(ArtifactsDir); err != nil {
		return nil, fmt.Errorf("open run: %w", err)
	}
	f, err := d.OpenFile(ResultsFile, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open results: %w", err)
	}
	if good < len(data) {
		if err := f.Truncate(int64(good)); err != nil {
			f.Close()
			return nil, fmt.Errorf("cut torn line: %w", err)
		}
	}
	if good > 0 && data[good-1] != '\n' {
		if _, err := f.Write([]byte{'\n'}); err != nil {
			f.Close()
			return nil, fmt.Errorf("open results: %w", err)
		}
	}
	w.f = f
	return w, nil
}

// Dir returns the run directory.
func (w *Writer) Dir() string { return w.dir }

// Root is the run directory as a safefs.Dir: every other file of the run
// is written through it.
func (w *Writer) Root() *safefs.Dir { return w.d }

// Warnings returns what Open noticed (torn last line).
func (w *Writer) Warnings() []string { return w.warn }

// Done reports whether the run already holds a (non-warmup, not failed)
// sample for the repetition rep of cell on kernel.
func (w *Writer) Done(cell, kernel string, rep int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done[Key{cell, kernel, rep}]
}

// Append writes s as one line of results.jsonl and fsyncs it. A zero Schema
// is set to SchemaVersion.
func (w *Writer) Append(s Sample) error { return w.AppendAll([]Sample{s}) }

// AppendAll writes ss as lines of results.jsonl, as Append would one by
// one, with one fsync at the end: merge copies a shard's samples at once
// (an fsync each took 10 s for 40,000 samples, 6 minutes for 600,000).
func (w *Writer) AppendAll(ss []Sample) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return errors.New("append sample: run writer is closed")
	}
	var buf []byte
	flush := func() error {
		if _, err := w.f.Write(buf); err != nil {
			return fmt.Errorf("append sample: %w", err)
		}
		buf = buf[:0]
		return nil
	}
	for _, s := range ss {
		if s.Schema == 0 {
			s.Schema = SchemaVersion
		}
		s = dropNonFinite(s)
		b, err := json.Marshal(&s)
		if err != nil {
			return fmt.Errorf("encode sample %s rep %d: %w", s.Cell, s.Rep, err)
		}
		if buf = append(append(buf, b...), '\n'); len(buf) >= appendChunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("append sample: fsync: %w", err)
	}
	for i := range ss {
		if !ss[i].Warmup && ss[i].Error == "" {
			w.done[ss[i].key()] = true
		}
	}
	return nil
}

// appendChunk is how many bytes of lines AppendAll gathers per write.
const appendChunk = 1 << 20

// WriteEnv replaces the run's env.json.
func (w *Writer) WriteEnv(env Env) error { return writeEnv(w.d, env) }

// ArtifactDir makes the directory for the raw outputs of one sample,
// ArtifactDir(cell, kernel, rep) under the run directory, emptied of what
// an interrupted attempt left there (the run directory is vnetbench's:
// Create made it with results.jsonl, Open resumes only one that holds
// it; a link at the name is removed, not followed, one on the way
// refused: safefs.RemoveOwn).
// It returns it as a safefs.Dir (its Path is absolute) and its
// path relative to the run directory, which Sample.Artifacts entries
// start with. The caller closes the Dir.
func (w *Writer) ArtifactDir(cell, kernel string, rep int) (out *safefs.Dir, rel string, err error) {
	rel = ArtifactDir(cell, kernel, rep)
	if err := w.d.MkdirAll(filepath.Dir(rel)); err != nil {
		return nil, "", fmt.Errorf("create artifact directory: %w", err)
	}
	if err := safefs.RemoveOwn(w.d, rel); err != nil {
		return nil, "", fmt.Errorf("clear artifact directory: %w", err)
	}
	if out, err = w.d.Sub(rel); err != nil {
		return nil, "", fmt.Errorf("create artifact directory: %w", err)
	}
	return out, rel, nil
}

// Close closes results.jsonl.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	w.d.Close()
	return err
}
