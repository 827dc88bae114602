package results

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// parseResults decodes results.jsonl data. It returns the samples, the
// number of bytes that form complete good lines, and warnings. A final line
// that does not decode (torn write) is a warning; any other bad line is an
// error naming file and line.
func parseResults(path string, data []byte) ([]Sample, int, []string, error) {
	var (
		out   = make([]Sample, 0, bytes.Count(data, []byte{'\n'})+1)
		warns []string
		off   int
		line  int
	)
	for off < len(data) {
		line++
		end := bytes.IndexByte(data[off:], '\n')
		last := end < 0
		var raw []byte
		next := len(data)
		if !last {
			raw = data[off : off+end]
			next = off + end + 1
			last = next == len(data)
		} else {
			raw = data[off:]
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			off = next
			continue
		}
		var s Sample
		err := json.Unmarshal(raw, &s)
		if err == nil && s.Schema > SchemaVersion {
			return nil, 0, nil, fault.Input("%s:%d: schema %d is newer than this vnetbench understands (%d); upgrade vnetbench", path, line, s.Schema, SchemaVersion)
		}
		if err != nil {
			if last {
				warns = append(warns, fmt.Sprintf("%s:%d: ignoring torn last line (%d bytes): %v", path, line, len(raw), err))
				return out, off, warns, nil
			}
			return nil, 0, nil, fault.Input("%s:%d: %v; the results file is damaged (delete the line to keep the rest)", path, line, err)
		}
		if end < 0 {
			// Complete JSON but no newline: keep it, but a writer must add
			// the newline before appending.
			out = append(out, s)
			return out, len(data), warns, nil
		}
		out = append(out, s)
		off = next
	}
	return out, off, warns, nil
}
