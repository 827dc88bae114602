package latency

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// ArtifactName is the file of a sample's raw probes in its artifact
// directory.
const ArtifactName = "probes.csv"

// csvHeader is probes.csv's first line. Every probe is one row, in send
// order: seq, phase (idle, warmup, load), size (UDP payload bytes), then
// CLOCK_REALTIME nanoseconds: sent_ns (before the send call), sched_ns
// (SCM_TSTAMP_SCHED: entered the device layer, before the qdisc), soft_ns
// (SCM_TSTAMP_SND: the driver took it), recv_ns (the reply's receive
// stamp), 0 = not seen; lost is 1 when no reply came within the timeout.
var csvHeader = []string{"seq", "phase", "size", "sent_ns", "sched_ns", "soft_ns", "recv_ns", "lost"}

// WriteCSV writes recs as probes.csv.
func WriteCSV(w io.Writer, recs []Record) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, r := range recs {
		lost := "0"
		if r.Lost {
			lost = "1"
		}
		row := []string{strconv.FormatUint(uint64(r.Seq), 10), r.Phase, strconv.Itoa(r.Size), i64(r.Sent), i64(r.Sched), i64(r.Soft), i64(r.Recv), lost}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadCSV reads a probes.csv; errors name the line.
func ReadCSV(r io.Reader) ([]Record, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(csvHeader)
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("probes.csv: header: %w", err)
	}
	if !slices.Equal(head, csvHeader) {
		return nil, fmt.Errorf("probes.csv: header %v, want %v", head, csvHeader)
	}
	var out []Record
	for line := 2; ; line++ {
		row, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("probes.csv: %w", err)
		}
		rec, err := parseRow(row)
		if err != nil {
			return nil, fmt.Errorf("probes.csv:%d: %w", line, err)
		}
		out = append(out, rec)
	}
}

func parseRow(row []string) (Record, error) {
	var r Record
	seq, err := strconv.ParseUint(row[0], 10, 32)
	if err != nil {
		return r, fmt.Errorf("seq: %w", err)
	}
	r.Seq = uint32(seq)
	switch row[1] {
	case PhaseIdle, PhaseWarmup, PhaseLoad:
		r.Phase = row[1]
	default:
		return r, fmt.Errorf("phase %q: want idle, warmup or load", row[1])
	}
	if r.Size, err = strconv.Atoi(row[2]); err != nil {
		return r, fmt.Errorf("size: %w", err)
	}
	for i, p := range []*int64{&r.Sent, &r.Sched, &r.Soft, &r.Recv} {
		if *p, err = strconv.ParseInt(row[3+i], 10, 64); err != nil {
			return r, fmt.Errorf("%s: %w", csvHeader[3+i], err)
		}
	}
	switch row[7] {
	case "0":
	case "1":
		r.Lost = true
	default:
		return r, fmt.Errorf("lost %q: want 0 or 1", row[7])
	}
	return r, nil
}
