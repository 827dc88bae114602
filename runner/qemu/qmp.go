package qemu

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// QMP is a minimal QEMU Machine Protocol client: one command at a time,
// asynchronous events are skipped.
type QMP struct {
	mu   sync.Mutex
	conn net.Conn
	r    *bufio.Reader
}

// DialQMP connects to a QMP unix socket, reads the greeting and
// negotiates capabilities.
func DialQMP(ctx context.Context, path string) (*QMP, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("qmp: %w", err)
	}
	q := &QMP{conn: conn, r: bufio.NewReader(conn)}
	q.setDeadline(ctx)
	var greet struct {
		QMP json.RawMessage `json:"QMP"`
	}
	line, err := q.r.ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &greet)
	}
	if err == nil && greet.QMP == nil {
		err = fmt.Errorf("unexpected greeting %q", line)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("qmp greeting: %w", err)
	}
	if err := q.Execute(ctx, "qmp_capabilities", nil, nil); err != nil {
		conn.Close()
		return nil, err
	}
	return q, nil
}

func (q *QMP) setDeadline(ctx context.Context) {
	if dl, ok := ctx.Deadline(); ok {
		q.conn.SetDeadline(dl)
	} else {
		q.conn.SetDeadline(time.Now().Add(30 * time.Second))
	}
}

// QMPError is an error reply from QEMU.
type QMPError struct {
	Command, Class, Desc string
}

func (e *QMPError) Error() string { return fmt.Sprintf("qmp %s: %s: %s", e.Command, e.Class, e.Desc) }

// Execute runs one command; args may be nil; result (a pointer) receives
// the "return" value when non-nil.
func (q *QMP) Execute(ctx context.Context, cmd string, args, result any) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.setDeadline(ctx)
	stop := context.AfterFunc(ctx, func() { q.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req := map[string]any{"execute": cmd}
	if args != nil {
		req["arguments"] = args
	}
	b, _ := json.Marshal(req)
	if _, err := q.conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("qmp %s: %w", cmd, err)
	}
	for {
		line, err := q.r.ReadBytes('\n')
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return fmt.Errorf("qmp %s: %w", cmd, err)
		}
		var resp struct {
			Return json.RawMessage `json:"return"`
			Error  *struct {
				Class string `json:"class"`
				Desc  string `json:"desc"`
			} `json:"error"`
			Event string `json:"event"`
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			return fmt.Errorf("qmp %s: bad reply %q: %w", cmd, line, err)
		}
		switch {
		case resp.Event != "":
			continue
		case resp.Error != nil:
			return &QMPError{Command: cmd, Class: resp.Error.Class, Desc: resp.Error.Desc}
		case resp.Return != nil:
			if result != nil {
				if err := json.Unmarshal(resp.Return, result); err != nil {
					return fmt.Errorf("qmp %s: decode reply: %w", cmd, err)
				}
			}
			return nil
		}
	}
}

// CPU is one vCPU as query-cpus-fast reports it.
type CPU struct {
	Index    int `json:"cpu-index"`
	ThreadID int `json:"thread-id"`
}

// CPUs returns the vCPUs and their host thread ids.
func (q *QMP) CPUs(ctx context.Context) ([]CPU, error) {
	var cpus []CPU
	if err := q.Execute(ctx, "query-cpus-fast", nil, &cpus); err != nil {
		return nil, err
	}
	if len(cpus) == 0 {
		return nil, errors.New("qmp query-cpus-fast: no vCPUs")
	}
	return cpus, nil
}

// KVM asks whether KVM is present and enabled (query-kvm).
func (q *QMP) KVM(ctx context.Context) (KVMState, error) {
	var st KVMState
	err := q.Execute(ctx, "query-kvm", nil, &st)
	return st, err
}

// Quit asks QEMU to exit. The connection closing before a reply counts as
// success.
func (q *QMP) Quit(ctx context.Context) error {
	err := q.Execute(ctx, "quit", nil, nil)
	var qe *QMPError
	if err != nil && !errors.As(err, &qe) {
		return nil // EOF/reset: QEMU is going away
	}
	return err
}

// Close closes the connection.
func (q *QMP) Close() error { return q.conn.Close() }
