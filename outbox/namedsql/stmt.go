package namedsql

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Stmt is one statement of a package's .sql files with the Go types sqlc
// would have generated for it. A is the struct of its arguments: each @name
// placeholder is the field tagged db:"name", bound with pgx.StrictStructArgs.
// R is what one result row becomes: a struct whose db tags are the
// statement's column names (read with pgx.RowToStructByName, so a column is
// found by its name, not its place), the Go type of a statement's single
// column (pgx.RowTo), or [NoRows] when its rows are not read.
//
// [Bind] checks the placeholders against A's fields with pgx's own parser,
// strictly, when the package is initialised, so a misspelt statement or
// argument name panics at start; [CheckColumns] has a database describe the
// statement and checks its result columns against R, in the package's test.
type Stmt[A, R any] struct {
	sql string
	// named is false for a statement without placeholders, which pgx then
	// sends as it is, with no rewriting.
	named bool
	rowTo pgx.RowToFunc[R]
	info  Info
}

// NoArgs is the arguments of a statement without placeholders.
type NoArgs struct{}

// NoRows is the row of a statement whose rows are not read (:exec).
type NoRows struct{}

// Info describes a bound statement for [CheckColumns].
type Info struct {
	// Name is the statement's name in its .sql file.
	Name string
	// Positional is the statement as pgx sends it, placeholders numbered.
	Positional string
	// Columns are R's db tags; nil when R is one column or NoRows.
	Columns []string
	// ReadsRows: whether the statement's rows are read (R is not NoRows).
	ReadsRows bool
}

// Execer runs a statement and discards its rows: a pgx.Tx, *pgxpool.Pool
// or *pgx.Conn.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Querier runs a statement and returns its rows.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// RowQuerier runs a statement that returns at most one row.
type RowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Bind resolves the statement called name in q and checks its placeholders
// against A's fields (a placeholder without a field and a field without a
// placeholder are both errors). It panics on any mismatch: call it in a
// package-level var, where the first test or binary start finds the mistake.
func Bind[A, R any](q Queries, name string) Stmt[A, R] {
	s := Stmt[A, R]{sql: q.Get(name)} // panics on an unknown name
	at, rt := reflect.TypeFor[A](), reflect.TypeFor[R]()
	if at.Kind() != reflect.Struct {
		panic(fmt.Sprintf("namedsql: statement %s: its arguments must be a struct, not %s", name, at))
	}
	var a A
	positional, _, err := pgx.StrictStructArgs(a).RewriteQuery(context.Background(), nil, s.sql, nil)
	if err != nil {
		panic(fmt.Sprintf("namedsql: statement %s and its arguments %s disagree: %v", name, at, err))
	}
	s.named = at.NumField() > 0
	s.info = Info{Name: name, Positional: positional, ReadsRows: rt != reflect.TypeFor[NoRows]()}
	if cols := dbTags(rt); len(cols) > 0 {
		s.rowTo = pgx.RowToStructByName[R]
		s.info.Columns = cols
	} else {
		s.rowTo = pgx.RowTo[R]
	}
	return s
}

// dbTags returns the db tags of t's fields when t is a struct that has any.
func dbTags(t reflect.Type) []string {
	if t.Kind() != reflect.Struct {
		return nil
	}
	var tags []string
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, ok := f.Tag.Lookup("db"); ok && tag != "-" {
			tags = append(tags, tag)
		} else if !ok && f.Anonymous {
			tags = append(tags, dbTags(f.Type)...) // pgx flattens an embedded struct
		}
	}
	return tags
}

// Info describes the statement, for [CheckColumns].
func (s Stmt[A, R]) Info() Info { return s.info }

// SQL is the statement's text as its .sql file has it, @name placeholders
// and all: with [Stmt.Args], what a caller that runs it its own way (an
// EXPLAIN in a test) sends.
func (s Stmt[A, R]) SQL() string { return s.sql }

// Args are the arguments of a pgx query method after [Stmt.SQL] that bind a
// to the statement's placeholders.
func (s Stmt[A, R]) Args(a A) []any { return s.args(a) }

// args binds a to the statement's placeholders: the arguments of a pgx query
// method after the statement's text.
func (s Stmt[A, R]) args(a A) []any {
	if !s.named {
		return nil
	}
	return []any{pgx.StrictStructArgs(a)}
}

// Exec runs the statement and discards its rows.
func (s Stmt[A, R]) Exec(ctx context.Context, db Execer, a A) (pgconn.CommandTag, error) {
	return db.Exec(ctx, s.sql, s.args(a)...)
}

// Rows runs the statement and leaves its rows to the caller, who must close
// them: for a caller that reads the rows its own way (a benchmark decoding
// every column, a test reading an EXPLAIN).
func (s Stmt[A, R]) Rows(ctx context.Context, db Querier, a A) (pgx.Rows, error) {
	return db.Query(ctx, s.sql, s.args(a)...)
}

// Queue queues the statement onto b with a's arguments, for a caller that
// sends several statements in one round trip; it reads the result through
// the returned query's callbacks.
func (s Stmt[A, R]) Queue(b *pgx.Batch, a A) *pgx.QueuedQuery {
	return b.Queue(s.sql, s.args(a)...)
}

// Collect reads every row of rows, which the statement returned (through
// [Stmt.Queue] or [Stmt.Rows]), into R, and closes them.
func (s Stmt[A, R]) Collect(rows pgx.Rows) ([]R, error) {
	return pgx.CollectRows(rows, s.rowTo)
}

// All runs the statement and returns every row.
func (s Stmt[A, R]) All(ctx context.Context, db Querier, a A) ([]R, error) {
	rows, err := db.Query(ctx, s.sql, s.args(a)...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, s.rowTo)
}

// One runs the statement and returns its first row, or pgx.ErrNoRows: a
// statement whose row is a struct of columns, or any statement on a handle
// that has Query.
func (s Stmt[A, R]) One(ctx context.Context, db Querier, a A) (R, error) {
	rows, err := db.Query(ctx, s.sql, s.args(a)...)
	if err != nil {
		var zero R
		return zero, err
	}
	return pgx.CollectOneRow(rows, s.rowTo)
}

// Value runs a statement whose result is one column and returns its first
// row's value, or pgx.ErrNoRows. It needs only QueryRow, so it runs on the
// narrowest handle a caller can give (a pgx.Tx, say); a statement whose R is
// a struct of columns panics here: read it with All.
func (s Stmt[A, R]) Value(ctx context.Context, db RowQuerier, a A) (R, error) {
	var v R
	if s.info.Columns != nil || !s.info.ReadsRows {
		panic(fmt.Sprintf("namedsql: statement %s does not return one column; read it with All", s.info.Name))
	}
	err := db.QueryRow(ctx, s.sql, s.args(a)...).Scan(&v)
	return v, err
}

// CheckColumns has the database describe each statement (prepared on conn,
// not run), what sqlc checks when it generates code: every result column of
// a statement read into a struct must be a field of it and every field a
// column, by name, and a statement read as one value must return one column.
// A package's test calls it with the Info of every statement it binds.
func CheckColumns(ctx context.Context, conn *pgx.Conn, stmts ...Info) error {
	for _, s := range stmts {
		sd, err := conn.Prepare(ctx, "", s.Positional)
		if err != nil {
			return fmt.Errorf("namedsql: statement %s: %w", s.Name, err)
		}
		var columns []string
		for _, f := range sd.Fields {
			columns = append(columns, f.Name)
		}
		switch {
		case !s.ReadsRows:
			// An :exec statement; its rows (if any) are discarded.
		case s.Columns == nil:
			if len(columns) != 1 {
				return fmt.Errorf("namedsql: statement %s is read as one value but returns the columns %v", s.Name, columns)
			}
		default:
			want, got := slices.Sorted(slices.Values(s.Columns)), slices.Sorted(slices.Values(columns))
			if !slices.Equal(want, got) {
				return fmt.Errorf("namedsql: statement %s returns the columns %v, its row struct's db tags are %v", s.Name, got, want)
			}
		}
	}
	return nil
}
