package scenarios

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// seriesFS holds the example patch series that built-in scenarios name
// as patches: [series:NAME] (series/NAME/*.patch, and a README.md saying
// what the series does and where it came from).
//
//go:embed series
var seriesFS embed.FS

// SeriesPrefix marks a patches: entry that names a shipped series.
const SeriesPrefix = "series:"

// SeriesName returns NAME of a "series:NAME" patches: entry, and whether
// the entry is one.
func SeriesName(entry string) (string, bool) {
	return strings.CutPrefix(entry, SeriesPrefix)
}

// SeriesNames lists the shipped series, sorted.
func SeriesNames() []string {
	ents, err := fs.ReadDir(seriesFS, "series")
	if err != nil {
		panic(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// SeriesPatches returns a shipped series' patches, file name to content,
// in the order they apply (sorted by name, as git format-patch numbers
// them). NAME/FILE is the one patch FILE of series NAME (a per-patch
// run's prefixes list a series' patches one by one).
func SeriesPatches(name string) ([]SeriesPatch, error) {
	if msg := checkSeries(name); msg != "" {
		return nil, &Error{Msg: msg}
	}
	if series, file, ok := strings.Cut(name, "/"); ok {
		b, err := seriesFS.ReadFile(path.Join("series", series, file))
		if err != nil {
			return nil, err
		}
		return []SeriesPatch{{Name: file, Data: b}}, nil
	}
	files, err := fs.Glob(seriesFS, path.Join("series", name, "*.patch"))
	if err != nil {
		return nil, err
	}
	var out []SeriesPatch
	for _, f := range files {
		b, err := seriesFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, SeriesPatch{Name: path.Base(f), Data: b})
	}
	return out, nil
}

// SeriesPatch is one file of a shipped series.
type SeriesPatch struct {
	Name string
	Data []byte
}

// checkSeries reports what is wrong with a "series:NAME" entry ("" =
// nothing).
func checkSeries(name string) string {
	if series, file, ok := strings.Cut(name, "/"); ok {
		if msg := checkSeries(series); msg != "" {
			return msg
		}
		if !strings.HasSuffix(file, ".patch") || strings.Contains(file, "/") {
			return fmt.Sprintf("series %s has no patch %q", series, file)
		}
		if _, err := fs.Stat(seriesFS, path.Join("series", series, file)); err != nil {
			return fmt.Sprintf("series %s has no patch %q", series, file)
		}
		return ""
	}
	if slices.Contains(SeriesNames(), name) {
		return ""
	}
	return fmt.Sprintf("no shipped series %q; known: %s (or give patch files, e.g. ~/series/v7/*.patch)", name, strings.Join(SeriesNames(), ", "))
}
