package store

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

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
type scanner interface{ Scan(...any) error }

// queryAll runs q and appends every row, as scan reads it, to out: nil or empty is how
// the caller shows no rows. what names the list in the error.
func queryAll[T any](t *Tx, out []T, what string, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	rows, err := t.query(q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
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

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }
