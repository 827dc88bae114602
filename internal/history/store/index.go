package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/safefs"

	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

// schema is the index. A run's values are one row of run_values: its
// series ids and values packed (see encodeValues), so adding a run writes
// a handful of rows and reading the history reads one row per run rather
// than one per point.
const schema = `
CREATE TABLE IF NOT EXISTS runs (
	id INTEGER PRIMARY KEY,
	path TEXT NOT NULL UNIQUE,
	time INTEGER NOT NULL,
	scenario TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS labels (
	run INTEGER NOT NULL,
	kernel TEXT NOT NULL,
	label TEXT NOT NULL,
	emulated INTEGER, -- 1 under emulation, 0 not, NULL unknown (see migrate)
	PRIMARY KEY (run, kernel)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS series (
	id INTEGER PRIMARY KEY,
	scenario TEXT NOT NULL,
	cell TEXT NOT NULL,
	kernel TEXT NOT NULL,
	metric TEXT NOT NULL,
	UNIQUE (scenario, cell, kernel, metric)
);
CREATE TABLE IF NOT EXISTS run_values (
	run INTEGER PRIMARY KEY,
	data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS run_spread (
	run INTEGER PRIMARY KEY,
	data BLOB NOT NULL
);
`

// Index is an open history index.
type Index struct {
	db   *sql.DB
	path string
}

// busyTimeout is how long a writer waits for another's transaction (a
// rebuild of a long history holds the lock for seconds) before it fails.
const busyTimeout = 60 * time.Second

// Open opens the index at path, creating it when missing.
func Open(path string) (*Index, error) {
	if err := noLink(path); err != nil {
		return nil, err
	}
	// SQLite cannot make a directory: its "unable to open database
	// file" read as a broken index to delete, where there is none.
	if dir := filepath.Dir(path); !isDir(dir) {
		return nil, fault.Input("history index %s: directory %s does not exist; create it or give --db a file in a directory that exists", path, dir)
	}
	// Nor open a directory: "delete it and rebuild" would have the user
	// delete a directory (of runs, perhaps) that is no index at all.
	if isDir(path) {
		return nil, fault.Input("history index %s: it is a directory, not an index; give --db a file name (in it, or elsewhere)", path)
	}
	x, err := open(path)
	if err != nil {
		return nil, openErr(path, err)
	}
	return x, nil
}

// noLink refuses a link at the index or its journals: SQLite follows
// one, and makes the journals beside a link's target.
func noLink(path string) error {
	return safefs.NoLink(append([]string{path}, journalNames(path)...)...)
}

// journalNames are the names of SQLite's journals of the index at path.
func journalNames(path string) []string {
	return []string{path + "-wal", path + "-shm", path + "-journal"}
}

// openErr says what failed opening the index at path: an index SQLite
// cannot use is the user's to rebuild.
func openErr(path string, err error) error {
	var se *sqlite.Error
	if isBusy(err) {
		return fmt.Errorf("history index %s: another process held it for over %v: %w; try again", path, busyTimeout, err)
	}
	if errors.As(err, &se) {
		return fault.Input("history index %s: %v; delete it and run 'vnetbench history rebuild RUN_DIR...'", path, err)
	}
	return fmt.Errorf("open history index %s: %w", path, err)
}

// open opens the index at path with every transaction immediate: it
// takes the write lock when it begins and waits up to busyTimeout for it.
// A deferred transaction that reads first and then writes (Add looks up
// the run's old record) cannot wait: SQLite answers SQLITE_BUSY at once
// when another writer committed in between, so concurrent 'history add'
// would fail.
func open(path string) (*Index, error) {
	dsn := "file:" + uriPath(absPath(path)) + fmt.Sprintf("?_txlock=immediate&_busy_timeout=%d", busyTimeout.Milliseconds()) +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if err := createSchema(db); err != nil {
		db.Close()
		return nil, err
	}
	return &Index{db: db, path: path}, nil
}

// createSchema creates the index's tables in one immediate transaction,
// and tries again while SQLite says the database is busy, up to
// busyTimeout. The first use of db opens its connection, which turns on
// WAL mode: on a new index that another process is creating at the same
// moment, SQLite answers SQLITE_BUSY at once, without waiting the busy
// timeout (10 concurrent first opens of one new index failed about 1 time
// in 100).
func createSchema(db *sql.DB) error {
	deadline := time.Now().Add(busyTimeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err := createSchemaOnce(db)
		if !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (any extended code).
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

func createSchemaOnce(db *sql.DB) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(schema); err != nil {
		return err
	}
	if err := migrate(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// migrate brings an index written by an older vnetbench up to schema:
// labels without an emulated column get one, NULL (unknown) in the rows
// they hold, which 'history rebuild' fills from the run directories. An
// older vnetbench still reads and writes the index (its rows: unknown).
func migrate(tx *sql.Tx) error {
	var n int
	if err := tx.QueryRow("SELECT count(*) FROM pragma_table_info('labels') WHERE name = 'emulated'").Scan(&n); err != nil || n > 0 {
		return err
	}
	_, err := tx.Exec("ALTER TABLE labels ADD COLUMN emulated INTEGER")
	return err
}

// uriPath escapes an absolute file name for an SQLite URI, so that '?',
// '#' and '%' in it are part of the name rather than a query, a fragment
// or an escape.
func uriPath(p string) string {
	var b strings.Builder
	for i := range len(p) {
		switch c := p[i]; c {
		case '?', '#', '%':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Close closes the index.
func (x *Index) Close() error { return x.db.Close() }

// Add records runs, replacing an earlier record of the same path, in one
// transaction.
func (x *Index) Add(ctx context.Context, runs ...*Run) error {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history index %s: %w", x.path, err)
	}
	defer tx.Rollback()
	seriesID := map[[4]string]int64{}
	for _, r := range runs {
		if err := addRun(ctx, tx, r, seriesID); err != nil {
			return fmt.Errorf("history index %s: add %s: %w", x.path, r.Path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history index %s: %w", x.path, err)
	}
	return nil
}

func addRun(ctx context.Context, tx *sql.Tx, r *Run, seriesID map[[4]string]int64) error {
	path := absPath(r.Path)
	var old int64
	switch err := tx.QueryRowContext(ctx, "SELECT id FROM runs WHERE path = ?", path).Scan(&old); {
	case err == nil:
		for _, q := range []string{"DELETE FROM run_values WHERE run = ?", "DELETE FROM run_spread WHERE run = ?", "DELETE FROM labels WHERE run = ?", "DELETE FROM runs WHERE id = ?"} {
			if _, err := tx.ExecContext(ctx, q, old); err != nil {
				return err
			}
		}
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	res, err := tx.ExecContext(ctx, "INSERT INTO runs (path, time, scenario) VALUES (?, ?, ?)", path, unixNano(r.Time), r.Scenario)
	if err != nil {
		return err
	}
	run, err := res.LastInsertId()
	if err != nil {
		return err
	}
	for kernel, label := range r.Labels {
		var emulated any // NULL: unknown
		if e, ok := r.Emulated[kernel]; ok {
			emulated = e
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO labels (run, kernel, label, emulated) VALUES (?, ?, ?, ?)", run, kernel, label, emulated); err != nil {
			return err
		}
	}
	ids := make([]int64, len(r.Values))
	for i, v := range r.Values {
		if ids[i], err = seriesFor(ctx, tx, [4]string{r.Scenario, v.Cell, v.Kernel, v.Metric}, seriesID); err != nil {
			return err
		}
	}
	if _, err = tx.ExecContext(ctx, "INSERT INTO run_values (run, data) VALUES (?, ?)", run, encodeValues(ids, r.Values)); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO run_spread (run, data) VALUES (?, ?)", run, encodeSpreads(ids, r.Values))
	return err
}

// encodeValues packs a run's values: per value its series id (uint32)
// and value (float64 bits), little-endian.
func encodeValues(ids []int64, vs []Value) []byte {
	b := make([]byte, 0, 12*len(vs))
	for i, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, uint32(ids[i]))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Value))
	}
	return b
}

// decodeValues calls f for each series id and value of data.
func decodeValues(data []byte, f func(series int64, v float64)) error {
	if len(data)%12 != 0 {
		return fmt.Errorf("run values of %d bytes, not a multiple of 12", len(data))
	}
	for i := 0; i < len(data); i += 12 {
		f(int64(binary.LittleEndian.Uint32(data[i:])), math.Float64frombits(binary.LittleEndian.Uint64(data[i+4:])))
	}
	return nil
}

func seriesFor(ctx context.Context, tx *sql.Tx, k [4]string, cache map[[4]string]int64) (int64, error) {
	if id, ok := cache[k]; ok {
		return id, nil
	}
	var id int64
	err := tx.QueryRowContext(ctx, "SELECT id FROM series WHERE scenario = ? AND cell = ? AND kernel = ? AND metric = ?", k[0], k[1], k[2], k[3]).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		var res sql.Result
		res, err = tx.ExecContext(ctx, "INSERT INTO series (scenario, cell, kernel, metric) VALUES (?, ?, ?, ?)", k[0], k[1], k[2], k[3])
		if err == nil {
			id, err = res.LastInsertId()
		}
	}
	if err != nil {
		return 0, err
	}
	cache[k] = id
	return id, nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Paths returns the paths of the recorded runs, in the order added.
func (x *Index) Paths(ctx context.Context) ([]string, error) {
	rows, err := x.db.QueryContext(ctx, "SELECT path FROM runs ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("history index %s: %w", x.path, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
