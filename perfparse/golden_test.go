package perfparse

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/golden"
)

// goldenInputs lists testdata/<kind>/<file> inputs (not golden files).
func goldenInputs(t testing.TB, kind string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join("testdata", kind))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".golden") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		out = append(out, filepath.Join("testdata", kind, e.Name()))
	}
	return out
}

// checkGolden compares got with path's golden file, path.golden.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.File(t, path+".golden", got)
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// all is a Parser of every kind, the tools' in the order the workloads
// register them (internal/workload/all): pktgen, trafgen, iperf3, testpmd.
var all = NewParser(PktgenScriptKind, PktgenKind, KpktgendKind, TrafgenKind, Iperf3Kind, TestpmdKind)

// TestGolden parses every input under testdata/<kind>/ with Parse and
// compares the JSON (or, for inputs named bad-*, the error) with the
// .golden file next to it.
func TestGolden(t *testing.T) {
	for _, kind := range all.Kinds() {
		if kind == "auto" {
			continue
		}
		if _, err := os.Stat(filepath.Join("testdata", kind)); err != nil {
			continue
		}
		for _, path := range goldenInputs(t, kind) {
			if fi, err := os.Stat(path); err != nil || fi.IsDir() {
				continue
			}
			t.Run(kind+"/"+filepath.Base(path), func(t *testing.T) {
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				v, err := all.Parse(kind, filepath.Base(path), f)
				bad := strings.HasPrefix(filepath.Base(path), "bad-")
				switch {
				case bad && err == nil:
					t.Fatalf("%s parsed without error, want one", path)
				case !bad && err != nil:
					t.Fatalf("%s: %v", path, err)
				case bad:
					checkGolden(t, path, []byte("error: "+err.Error()+"\n"))
				default:
					checkGolden(t, path, marshal(t, v))
				}
			})
		}
	}
}

// TestGoldenNetdevSysfs parses the captured statistics directories.
func TestGoldenNetdevSysfs(t *testing.T) {
	for _, path := range goldenInputs(t, "netdev") {
		if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			s, err := ParseNetdevStats(os.DirFS(path))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, path, marshal(t, s))
		})
	}
}

// TestDetect checks that auto detection names the directory's kind for
// every good input, with the tools' kinds in registration order and
// reversed except that the pktgen scripts' output (which quotes device
// files) comes before the device files': the workloads' order does not
// change what is detected.
func TestDetect(t *testing.T) {
	reversed := NewParser(TestpmdKind, Iperf3Kind, TrafgenKind, KpktgendKind, PktgenScriptKind, PktgenKind)
	for _, kind := range all.Kinds() {
		if kind == "auto" {
			continue
		}
		if _, err := os.Stat(filepath.Join("testdata", kind)); err != nil {
			continue
		}
		for _, path := range goldenInputs(t, kind) {
			if fi, err := os.Stat(path); err != nil || fi.IsDir() || strings.HasPrefix(filepath.Base(path), "bad-") {
				continue
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := all.Detect(data); got != kind {
				t.Errorf("Detect(%s) = %q, want %q", path, got, kind)
			}
			if got := reversed.Detect(data); got != kind {
				t.Errorf("Detect(%s), tools' kinds reversed, = %q, want %q", path, got, kind)
			}
		}
	}
}
