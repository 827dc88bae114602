package perfparse

import (
	"bufio"
	"bytes"
	"io"
)

// MaxLine bounds one line of a tool's text output: far above any real
// line (a perf report row with a long C++ symbol or a folded call chain is
// a few KB), far below a small machine's memory. A longer line is a
// *SyntaxError, so input without line breaks (/dev/zero) ends at the bound.
const MaxLine = 4 << 20

// lineReader yields lines without the trailing "\n"/"\r\n", with mail
// quote marks ("> ", "> > ", ">") removed, and counts lines from 1.
type lineReader struct {
	br   *bufio.Reader
	line int
	buf  []byte // for lines longer than the bufio buffer
	err  error
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line (valid until the following call) and false
// at end of input or on a read error (see lr.err).
func (lr *lineReader) next() ([]byte, bool) {
	b, err := lr.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		lr.buf = append(lr.buf[:0], b...)
		for err == bufio.ErrBufferFull {
			if len(lr.buf) > MaxLine {
				lr.err = errorf(lr.line+1, "line longer than %d MiB, more than any line of a tool's text output; is this the right file?", MaxLine>>20)
				return nil, false
			}
			b, err = lr.br.ReadSlice('\n')
			lr.buf = append(lr.buf, b...)
		}
		b = lr.buf
	}
	if len(b) == 0 {
		if err != nil && err != io.EOF {
			lr.err = err
		}
		return nil, false
	}
	if err != nil && err != io.EOF {
		lr.err = err
		return nil, false
	}
	lr.line++
	b = bytes.TrimSuffix(b, []byte{'\n'})
	b = bytes.TrimSuffix(b, []byte{'\r'})
	return unquote(b), true
}

// unquote removes leading mail quote marks: ">", "> ", "> > ", " > ".
func unquote(b []byte) []byte {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	if i >= len(b) || b[i] != '>' {
		return b
	}
	for i < len(b) && b[i] == '>' {
		i++
		if i < len(b) && b[i] == ' ' {
			i++
		}
		j := i
		for j < len(b) && b[j] == ' ' {
			j++
		}
		if j < len(b) && b[j] == '>' {
			i = j
		}
	}
	return b[i:]
}

// readLines reads all lines (quote marks removed) as strings.
func readLines(r io.Reader) ([]string, error) {
	lr := newLineReader(r)
	var out []string
	for {
		b, ok := lr.next()
		if !ok {
			break
		}
		out = append(out, string(b))
	}
	return out, lr.err
}

// readUnquoted reads all of r; when the text carries mail quote marks
// ("> " at the start of its first non-blank line) they are removed from
// every line, keeping the line count.
func readUnquoted(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	t := bytes.TrimLeft(data, " \t\r\n")
	if len(t) == 0 || t[0] != '>' {
		return data, nil
	}
	lines := bytes.Split(data, []byte{'\n'})
	for i, l := range lines {
		lines[i] = unquote(bytes.TrimSuffix(l, []byte{'\r'}))
	}
	return bytes.Join(lines, []byte{'\n'}), nil
}
