package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the SQLite driver, pure Go
)

// Open opens (creating if needed) the database at path and applies pending migrations.
func Open(ctx context.Context, path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// One connection: SQLite serializes writers anyway, and one connection keeps every
	// read consistent with the last write without cross-connection surprises.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, now: time.Now, stmts: map[string]*sql.Stmt{}}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Check runs SQLite's quick_check over the whole database: nil when it finds nothing
// wrong, else an error listing the first problems.
func (s *Store) Check(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, "PRAGMA quick_check(5)")
	if err != nil {
		return fmt.Errorf("store: quick_check: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("store: quick_check: %w", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: quick_check: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("store: database damaged: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error {
	s.stmtMu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = map[string]*sql.Stmt{}
	s.stmtMu.Unlock()
	return s.db.Close()
}

// prepare caches statements for the queries a transaction ran unprepared.
func (s *Store) prepare(queries []string) {
	for _, q := range queries {
		s.stmtMu.Lock()
		_, have := s.stmts[q]
		s.stmtMu.Unlock()
		if have {
			continue
		}
		st, err := s.db.Prepare(q)
		if err != nil {
			continue // it will run unprepared, as it did
		}
		s.stmtMu.Lock()
		if _, have := s.stmts[q]; have {
			st.Close()
		} else {
			s.stmts[q] = st
		}
		s.stmtMu.Unlock()
	}
}

func (s *Store) migrate(ctx context.Context) error {
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("store: reading schema version: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("store: database schema version %d is newer than this agentd (%d): upgrade agentd", v, len(migrations))
	}
	for i := v; i < len(migrations); i++ {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			tx.Rollback()
			return fmt.Errorf("store: migration %d: %w", i+1, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", i+1)); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("store: migration %d: %w", i+1, err)
		}
	}
	return nil
}

// Tx runs fn in one write transaction: all of it lands, or none of it.
func (s *Store) Tx(ctx context.Context, fn func(*Tx) error) error {
	sqlTx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	tx := &Tx{tx: sqlTx, now: s.now().UTC(), s: s}
	defer func() { s.prepare(tx.missed) }()
	if err := fn(tx); err != nil {
		sqlTx.Rollback()
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	for _, f := range tx.after {
		f()
	}
	return nil
}

// AfterCommit runs f once the transaction has committed, and never if it rolls back: how
// derived data (the memory index) follows what is durable.
func (t *Tx) AfterCommit(f func()) { t.after = append(t.after, f) }

// View runs fn for reading; it sees one consistent snapshot. A read that ends without
// error counts as committed: what fn queued with AfterCommit runs after it.
func (s *Store) View(ctx context.Context, fn func(*Tx) error) error {
	sqlTx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	tx := &Tx{tx: sqlTx, now: s.now().UTC(), s: s}
	err = func() error {
		defer func() {
			sqlTx.Rollback()
			s.prepare(tx.missed)
		}()
		return fn(tx)
	}()
	if err != nil {
		return err
	}
	for _, f := range tx.after {
		f()
	}
	return nil
}

// Read is View for one value: what fn returns from its snapshot.
func Read[T any](ctx context.Context, s *Store, fn func(*Tx) (T, error)) (T, error) {
	var v T
	err := s.View(ctx, func(tx *Tx) (err error) {
		v, err = fn(tx)
		return err
	})
	return v, err
}

// Tx is a transaction; its methods are the store's queries.
type Tx struct {
	tx     *sql.Tx
	now    time.Time
	s      *Store
	missed []string
	after  []func()
}

// stmt returns the cached statement for q bound to this transaction, or nil.
func (t *Tx) stmt(q string) *sql.Stmt {
	t.s.stmtMu.Lock()
	st := t.s.stmts[q]
	t.s.stmtMu.Unlock()
	if st == nil {
		t.missed = append(t.missed, q)
		return nil
	}
	return t.tx.Stmt(st)
}

func (t *Tx) exec(q string, args ...any) (sql.Result, error) {
	if st := t.stmt(q); st != nil {
		return st.Exec(args...)
	}
	return t.tx.Exec(q, args...)
}

// write runs a statement that returns no rows; what names it in the error.
func (t *Tx) write(what, q string, args ...any) error {
	if _, err := t.exec(q, args...); err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	return nil
}

// affected runs a statement that changes at most one row and reports whether it did;
// what names it in the error.
func (t *Tx) affected(what, q string, args ...any) (bool, error) {
	res, err := t.exec(q, args...)
	if err != nil {
		return false, fmt.Errorf("store: %s: %w", what, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

func (t *Tx) query(q string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(q); st != nil {
		return st.Query(args...)
	}
	return t.tx.Query(q, args...)
}

func (t *Tx) queryRow(q string, args ...any) *sql.Row {
	if st := t.stmt(q); st != nil {
		return st.QueryRow(args...)
	}
	return t.tx.QueryRow(q, args...)
}

// scanner is one row to read: a *sql.Row or the current row of *sql.Rows.
type scanner = interface{ Scan(...any) error }

// queryAll runs q and appends every row, as scan reads it, to out: nil or empty is how
// the caller shows no rows. what names the list in the error.
func queryAll[T any](t *Tx, out []T, what string, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	err := eachRow(t, what, func(sc scanner) error {
		v, err := scan(sc)
		out = append(out, v)
		return err
	}, q, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachRow runs q and hands every row to each, stopping at its first error, which is
// returned as it is; what names the rows in the query's own error.
func eachRow(t *Tx, what string, each func(scanner) error, q string, args ...any) error {
	rows, err := t.query(q, args...)
	if err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// value adapts a scanner of *T to a scanner of T, for lists of values.
func value[T any](scan func(scanner) (*T, error)) func(scanner) (T, error) {
	return func(sc scanner) (T, error) {
		p, err := scan(sc)
		if err != nil {
			var zero T
			return zero, err
		}
		return *p, nil
	}
}

// scanString reads a row of one text column.
func scanString(sc scanner) (string, error) {
	var s string
	err := sc.Scan(&s)
	return s, err
}

// Now is the transaction's timestamp.
func (t *Tx) Now() time.Time { return t.now }

// ErrNotFound is returned when a row does not exist.
var ErrNotFound = errors.New("not found")

// rowError is a single-row read's error: ErrNotFound when there is no row, else err
// wrapped with what was read.
func rowError(what string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return fmt.Errorf("store: %s: %w", what, err)
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// msOrZero and fromMSOrZero write and read a time column where 0 is no time.
func msOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return ms(t)
}

func fromMSOrZero(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return fromMS(v)
}
