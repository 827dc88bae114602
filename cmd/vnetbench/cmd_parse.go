package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/perfparse"
)

// cmdParse implements `vnetbench parse KIND [FILE|-]`: it parses one tool
// output with perfparse and prints the record as indented JSON. For kind
// netdev, FILE may also be a /sys/class/net/DEV/statistics directory.
func cmdParse(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	p := perfparse.NewParser(workload.ParseKinds()...)
	kinds := strings.Join(p.Kinds(), ", ")
	fs := newFlagSet("parse", "[--imix-before FILE] KIND [FILE|-]\n\nKINDS: "+kinds+"\nReads standard input when FILE is - or missing.", stderr)
	imixBefore := fs.String("imix-before", "", "kind pktgen in IMIX mode: the device `FILE` read just before this run, whose imix_size_counts the run's bytes are counted from (the kernel never resets them)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		fs.Usage()
		return usageErrorf("parse: want KIND [FILE|-] (kinds: %s)", kinds)
	}
	kind := pos[0]
	if !p.Has(kind) {
		return usageErrorf("parse: unknown kind %q; kinds: %s", kind, kinds)
	}
	in := cl.stdin
	name := "<stdin>"
	if len(pos) == 2 && pos[1] != "-" {
		name = pos[1]
		fi, err := os.Stat(name)
		if errors.Is(err, os.ErrNotExist) {
			return usageErrorf("parse: %s does not exist: give the file the tool's output was saved to, or - (or nothing) to read standard input", name)
		}
		if err != nil {
			return usageErrorf("parse: %v", err)
		}
		if fi.IsDir() {
			if kind != "netdev" && kind != "auto" {
				return usageErrorf("parse: %s is a directory; only kind netdev reads a directory (/sys/class/net/DEV/statistics)", name)
			}
			st, err := perfparse.ParseNetdevStats(os.DirFS(name))
			if err != nil {
				var se *perfparse.SyntaxError
				if errors.As(err, &se) {
					c := *se
					c.File = filepath.Join(name, se.File)
					err = &c
				}
				if kind == "auto" {
					// auto guessed netdev from the directory alone: say
					// that, not only the first file that did not fit.
					return usageErrorf("parse: %s is a directory, and auto reads a directory only as /sys/class/net/DEV/statistics, which it is not (%v); give a file", name, err)
				}
				return err
			}
			return writeJSON(stdout, st)
		}
		f, err := os.Open(name)
		if err != nil {
			return usageErrorf("parse: %v", err)
		}
		defer f.Close()
		in = f
	}
	if kind == "perf-report" { // streamed: constant memory at any size
		return streamPerfReport(stdout, name, in)
	}
	// Bounded: /dev/zero or a FIFO that never ends is an error at the
	// bound, not a process that grows until the machine runs out.
	v, err := p.Parse(kind, name, safefs.Reader(in, safefs.MaxToolOutput, name))
	if err != nil {
		return err
	}
	if *imixBefore != "" {
		if err := imixBytesSince(v, *imixBefore, name); err != nil {
			return err
		}
	}
	return writeJSON(stdout, v)
}

// imixBytesSince sets the bytes of the pktgen IMIX run v from the growth
// of its per-size counts since the device file before
// (perfparse.PktgenDevice.SetImixBytesSince).
func imixBytesSince(v any, before, name string) error {
	d, ok := v.(*perfparse.PktgenDevice)
	if !ok {
		return usageErrorf("parse: --imix-before is for kind pktgen (a /proc/net/pktgen/DEV file); %s is not one", name)
	}
	f, err := os.Open(before)
	if err != nil {
		return usageErrorf("parse: --imix-before: %v", err)
	}
	defer f.Close()
	b, err := perfparse.ParsePktgen(safefs.Reader(f, safefs.MaxToolOutput, before))
	if err != nil {
		return perfparse.WithFile(err, before)
	}
	return perfparse.WithFile(d.SetImixBytesSince(b), name)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("parse: encode json: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// streamPerfReport prints a perf report as the same JSON as
// perfparse.ParsePerfReport would give, row by row, so that a report of
// any size is printed in constant memory. On a parse error the output
// stops where the error is.
func streamPerfReport(w io.Writer, name string, r io.Reader) error {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	rr := perfparse.NewPerfReportReader(r)
	indent := func(v any, prefix string) ([]byte, error) {
		b, err := json.MarshalIndent(v, prefix, "  ")
		if err != nil {
			return nil, fmt.Errorf("parse: encode json: %w", err)
		}
		return b, nil
	}
	section, rows := -1, 0
	io.WriteString(bw, "{\n  \"sections\": [")
	for rr.Next() {
		if rr.Section() != section {
			if section != -1 {
				io.WriteString(bw, "\n      ]\n    },")
			}
			section, rows = rr.Section(), 0
			h, err := indent(rr.Header(), "      ")
			if err != nil {
				return err
			}
			fmt.Fprintf(bw, "\n    {\n      \"header\": %s,\n      \"rows\": [", h)
		}
		row := *rr.Row()
		if len(row.CallGraph) == 0 {
			row.CallGraph = nil
		}
		b, err := indent(row, "        ")
		if err != nil {
			return err
		}
		if rows > 0 {
			bw.WriteByte(',')
		}
		rows++
		bw.WriteString("\n        ")
		bw.Write(b)
	}
	if err := rr.Err(); err != nil {
		if section == -1 {
			bw.Reset(w) // no row printed: no half an object either
		} else {
			bw.WriteString("\n")
		}
		return perfparse.WithFile(err, name)
	}
	if section == -1 {
		// No rows: discard the opening and print what ParsePerfReport gives.
		bw.Reset(w)
		if rr.Section() == 0 {
			return perfparse.WithFile(&perfparse.SyntaxError{Msg: "perf report: no rows and no \"# Samples:\" header (is this perf report --stdio output?)"}, name)
		}
		return writeJSON(w, &perfparse.PerfReport{Sections: []perfparse.PerfReportSection{{Header: *rr.Header(), Rows: []perfparse.PerfReportRow{}}}})
	}
	io.WriteString(bw, "\n      ]\n    }\n  ]\n}\n")
	return nil
}
