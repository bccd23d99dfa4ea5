// Package schemaset applies one set of goose migrations that records its
// versions in a version table of its own, and adopts a database that
// outflow migrated before its schema was split in two.
//
// outflow's database holds two sets: the outbox's own tables (package
// outbox, version table outflow_schema_version) and the order app's
// (package migrations, outflow_orders_schema_version). Neither uses goose's
// default table, goose_db_version, so a team's own goose migrations live
// beside them without either seeing the other's versions.
//
// # Legacy databases
//
// Until the split, one goose sequence (versions 1 to [LegacyMaxVersion] in
// goose_db_version) made both sets. Each set kept the numbers of the
// migrations it was cut from (legacy 00001 and 00002 made tables of both
// and became a file of each set under the same number; 00009, the CDC
// publication, is kept by the outbox's 00020, which makes it only where it
// is missing), so adopting a legacy database is
// exact: a set whose version table is missing (or holds only goose's
// version 0) while its legacy tables exist, beside a goose_db_version whose
// versions are exactly 1..N with N at most LegacyMaxVersion, records its own
// versions up to N and then applies the rest as usual. goose_db_version is
// read, never written: an older binary still reads its version, and the
// table may be dropped once none runs. The tables present without a
// goose_db_version of that shape are refused: something other than
// outflow's migrations made them, and no version can be assumed.
package schemaset

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
)

const (
	// LegacyTable is goose's default version table, which recorded the
	// single sequence of outflow's migrations before the split.
	LegacyTable = goose.DefaultTablename
	// LegacyMaxVersion is the last version of that sequence.
	LegacyMaxVersion = 10
)

// Set is one set of migrations with its own version table.
type Set struct {
	// Name says which schema this is in messages ("outbox", "order app").
	Name string
	// Table is the version table. Mandatory.
	Table string
	// Files are the goose SQL migrations (NNNNN_name.sql at the root).
	Files fs.FS
	// LegacyTables are the tables of this set that legacy migration 00001
	// created: present on every database the legacy sequence migrated.
	LegacyTables []string
	// Outdated is wrapped by the error [Set.Check] returns (alongside
	// [ErrOutdated]), so a package can offer a sentinel of its own.
	Outdated error
	// Fix says how to bring the schema up to date, in [OutdatedError]'s
	// message ("run outbox.Migrate").
	Fix string
}

// ErrOutdated is wrapped by every [OutdatedError].
var ErrOutdated = errors.New("schema is outdated")

// OutdatedError says a set's schema is behind the migrations this binary
// carries.
type OutdatedError struct {
	Set *Set
	// Current is the highest version applied (0: none, or no version table).
	Current int64
	// Target is the highest version this binary carries.
	Target int64
	// Pending are the versions not applied yet, ascending.
	Pending []int64
}

func (e *OutdatedError) Error() string {
	return fmt.Sprintf("the %s schema (%s) is at version %d, this binary needs %d; %s",
		e.Set.Name, e.Set.Table, e.Current, e.Target, e.Set.Fix)
}

// Is reports whether target is [ErrOutdated] or the set's own sentinel.
func (e *OutdatedError) Is(target error) bool {
	return target == ErrOutdated || (e.Set.Outdated != nil && target == e.Set.Outdated)
}

// Result is what [Set.Up] did.
type Result struct {
	// Adopted is the legacy version the set's versions were recorded from
	// (see the package doc); 0 when there was nothing to adopt.
	Adopted int64
	// Applied are the versions this call applied, ascending.
	Applied []int64
	// AppliedFiles are their files' names (00003_shipping_address.sql),
	// in the same order.
	AppliedFiles []string
	// Version is the highest version applied afterwards.
	Version int64
}

// Describe says what r, a result of s.Up, did, for an operator: "applied
// 3 migrations: 00001_init.sql, ...; now at version 3", or "already up to
// date at version N", after the set's name and table.
func (s *Set) Describe(r Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s schema (%s): ", s.Name, s.Table)
	if r.Adopted > 0 {
		fmt.Fprintf(&b, "adopted from %s at version %d; ", LegacyTable, r.Adopted)
	}
	switch n := len(r.Applied); n {
	case 0:
		fmt.Fprintf(&b, "already up to date at version %d", r.Version)
	default:
		what := "migrations"
		if n == 1 {
			what = "migration"
		}
		fmt.Fprintf(&b, "applied %d %s: %s; now at version %d", n, what, strings.Join(r.AppliedFiles, ", "), r.Version)
	}
	return b.String()
}

// registry holds the sets of the packages linked in, by version table.
var registry []*Set

// Register adds s to the sets [All] and [Lookup] return and returns it. The
// packages that own a set register it when they are initialised, so code
// that migrates or fingerprints a whole database reaches every set without
// their exporting more than their own Migrate.
func Register(s *Set) *Set {
	if s.Table == "" || s.Files == nil {
		panic("schemaset: a set needs a version table and its files")
	}
	for _, r := range registry {
		if r.Table == s.Table {
			panic("schemaset: version table " + s.Table + " registered twice")
		}
	}
	registry = append(registry, s)
	return s
}

// Lookup returns the registered set whose version table is table.
func Lookup(table string) *Set {
	for _, s := range registry {
		if s.Table == table {
			return s
		}
	}
	panic("schemaset: no set records its versions in " + table + "; import the package that owns it")
}

// All returns the registered sets in the order their packages were
// initialised (a set's dependencies first).
func All() []*Set { return slices.Clone(registry) }

// LockID is the advisory lock key that serialises the set's migrations: a
// checksum of its version table, so two sets never share one, and neither
// shares goose's default (the checksum of "goose") with a team's goose.
func (s *Set) LockID() int64 { return int64(crc32.ChecksumIEEE([]byte(s.Table))) }

func (s *Set) store() database.Store {
	st, err := database.NewStore(database.DialectPostgres, s.Table)
	if err != nil {
		panic(err) // only an empty table name fails, which Register refuses
	}
	return st
}

// provider opens goose over db with the set's store. Every change takes the
// set's advisory lock, polled every second (goose's default is every five).
func (s *Set) provider(db *sql.DB, logger *slog.Logger) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(s.LockID()), lock.WithLockTimeout(1, 300))
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{
		goose.WithStore(s.store()),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger), goose.WithVerbose(true))
	}
	p, err := goose.NewProvider(goose.DialectCustom, db, s.Files, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s schema: %w", s.Name, err)
	}
	return p, nil
}

// Versions returns the set's file versions, ascending.
func (s *Set) Versions() ([]int64, error) {
	names, err := fs.Glob(s.Files, "*.sql")
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, n := range names {
		v, err := goose.NumericComponent(n)
		if err != nil {
			return nil, fmt.Errorf("%s schema: %s: %w", s.Name, n, err)
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return out, nil
}

// Up adopts a legacy database (see the package doc), then applies every
// pending migration. Concurrent callers are serialised by the set's
// advisory lock. logger, when not nil, hears each migration applied and an
// adoption.
func (s *Set) Up(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) (Result, error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	var res Result
	adopted, err := s.adopt(ctx, db)
	if err != nil {
		return res, err
	}
	res.Adopted = adopted
	if adopted > 0 && logger != nil {
		logger.Info("schema adopted from the legacy version table", "schema", s.Name, "table", s.Table,
			"legacy_table", LegacyTable, "legacy_version", adopted)
	}
	p, err := s.provider(db, logger)
	if err != nil {
		return res, err
	}
	results, err := p.Up(ctx)
	if err != nil {
		return res, fmt.Errorf("%s schema: up: %w", s.Name, err)
	}
	for _, r := range results {
		res.Applied = append(res.Applied, r.Source.Version)
		res.AppliedFiles = append(res.AppliedFiles, path.Base(r.Source.Path))
	}
	applied, err := s.applied(ctx, db)
	if err != nil {
		return res, err
	}
	if len(applied) > 0 {
		res.Version = applied[len(applied)-1]
	}
	return res, nil
}

// Check returns an [*OutdatedError] when a version of the set's files is
// not recorded. It reads only: a missing version table counts as none
// applied, and is not created.
func (s *Set) Check(ctx context.Context, pool *pgxpool.Pool) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	want, err := s.Versions()
	if err != nil {
		return err
	}
	applied, err := s.applied(ctx, db)
	if err != nil {
		return err
	}
	if len(want) == 0 {
		return fmt.Errorf("%s schema: no migration files", s.Name)
	}
	e := &OutdatedError{Set: s, Target: want[len(want)-1]}
	if len(applied) > 0 {
		e.Current = applied[len(applied)-1]
	}
	for _, v := range want {
		if _, found := slices.BinarySearch(applied, v); !found {
			e.Pending = append(e.Pending, v)
		}
	}
	if len(e.Pending) > 0 {
		return e
	}
	return nil
}

// Installed reports whether the set's version table exists: the set was
// migrated here (Check creates nothing).
func (s *Set) Installed(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	return tableExists(ctx, db, s.store())
}

// applied returns the versions above 0 in the set's version table,
// ascending; none when the table is missing. Like goose, it counts every
// row of a version as applied.
func (s *Set) applied(ctx context.Context, db database.DBTxConn) ([]int64, error) {
	st := s.store()
	ok, err := tableExists(ctx, db, st)
	if err != nil || !ok {
		return nil, err
	}
	return versionsIn(ctx, db, st)
}

// adopt records the set's versions from a legacy database in one
// transaction under the set's lock and the legacy sequence's (goose's
// default, which an older outflow binary's migrate takes), and returns the
// legacy version it adopted, or 0.
func (s *Set) adopt(ctx context.Context, db *sql.DB) (adopted int64, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, qLockSet.SQL(), qLockSet.Args(lockArgs{LockKey: s.LockID()})...); err != nil {
		return 0, fmt.Errorf("%s schema: lock: %w", s.Name, err)
	}
	st := s.store()
	own, err := tableExists(ctx, tx, st)
	if err != nil {
		return 0, err
	}
	if own {
		versions, err := versionsIn(ctx, tx, st)
		if err != nil {
			return 0, err
		}
		if len(versions) > 0 {
			return 0, tx.Commit() // already versioned here: goose takes it from there
		}
	}
	var tables tablesPresentRow
	if err := tx.QueryRowContext(ctx, qTablesPresent.SQL(), qTablesPresent.Args(tablesArgs{Tables: s.LegacyTables})...).
		Scan(&tables.PresentCount, &tables.Present); err != nil {
		return 0, fmt.Errorf("%s schema: look up its tables: %w", s.Name, err)
	}
	if tables.PresentCount == 0 {
		return 0, tx.Commit() // a fresh install, whatever else the database holds
	}
	legacy := legacyStore()
	legacyExists, err := tableExists(ctx, tx, legacy)
	if err != nil {
		return 0, err
	}
	var legacyVersions []int64
	if legacyExists {
		if _, err := tx.ExecContext(ctx, qLockSet.SQL(), qLockSet.Args(lockArgs{LockKey: lock.DefaultLockID})...); err != nil {
			return 0, fmt.Errorf("%s schema: lock %s: %w", s.Name, LegacyTable, err)
		}
		if legacyVersions, err = versionsIn(ctx, tx, legacy); err != nil {
			return 0, err
		}
	}
	n, ok := legacySequence(legacyVersions)
	if ok && tables.PresentCount < int64(len(s.LegacyTables)) {
		return 0, fmt.Errorf("%s schema: %s says outflow migrated this database to version %d, but of its tables %s only %s exist(s); restore the missing ones before migrating",
			s.Name, LegacyTable, n, strings.Join(s.LegacyTables, ", "), tables.Present)
	}
	if !ok {
		return 0, fmt.Errorf("%s schema: this database has %s but no %s, and %s; outflow did not make these tables, so it cannot tell which of its migrations they have. Drop them if they are a copy you no longer use, or record their versions by hand (see docs/reference.md, \"Version tables\")",
			s.Name, tables.Present, s.Table, describeLegacy(legacyExists, legacyVersions))
	}
	want, err := s.Versions()
	if err != nil {
		return 0, err
	}
	if !own {
		if err := st.CreateVersionTable(ctx, tx); err != nil {
			return 0, fmt.Errorf("%s schema: %w", s.Name, err)
		}
	}
	if _, err := st.GetMigration(ctx, tx, 0); errors.Is(err, database.ErrVersionNotFound) {
		// goose inserts version 0 with the table and expects it there.
		if err := st.Insert(ctx, tx, database.InsertRequest{Version: 0}); err != nil {
			return 0, fmt.Errorf("%s schema: %w", s.Name, err)
		}
	} else if err != nil {
		return 0, fmt.Errorf("%s schema: %w", s.Name, err)
	}
	for _, v := range want {
		if v > n {
			break
		}
		if err := st.Insert(ctx, tx, database.InsertRequest{Version: v}); err != nil {
			return 0, fmt.Errorf("%s schema: %w", s.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("%s schema: record the adopted versions: %w", s.Name, err)
	}
	return n, nil
}

// legacySequence returns N when versions (ascending, above 0) are exactly
// 1..N of the legacy sequence.
func legacySequence(versions []int64) (int64, bool) {
	n := int64(len(versions))
	if n == 0 || n > LegacyMaxVersion {
		return 0, false
	}
	for i, v := range versions {
		if v != int64(i+1) {
			return 0, false
		}
	}
	return n, true
}

func describeLegacy(exists bool, versions []int64) string {
	switch {
	case !exists:
		return "no " + LegacyTable
	case len(versions) == 0:
		return LegacyTable + " records no version"
	}
	s := make([]string, len(versions))
	for i, v := range versions {
		s[i] = fmt.Sprint(v)
	}
	return fmt.Sprintf("%s holds versions %s, not outflow's 1..N (N at most %d)", LegacyTable, strings.Join(s, ","), LegacyMaxVersion)
}

func legacyStore() database.Store {
	st, err := database.NewStore(database.DialectPostgres, LegacyTable)
	if err != nil {
		panic(err)
	}
	return st
}

// tableExists asks goose's store, which looks in current_schema() as goose
// does before it creates the table.
func tableExists(ctx context.Context, db database.DBTxConn, st database.Store) (bool, error) {
	ext, ok := st.(database.StoreExtender)
	if !ok {
		return false, fmt.Errorf("schemaset: goose's postgres store cannot tell whether %s exists", st.Tablename())
	}
	return ext.TableExists(ctx, db)
}

// versionsIn returns the distinct versions above 0 of st's table,
// ascending.
func versionsIn(ctx context.Context, db database.DBTxConn, st database.Store) ([]int64, error) {
	rows, err := st.ListMigrations(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", st.Tablename(), err)
	}
	var out []int64
	for _, r := range rows {
		if r.Version > 0 {
			out = append(out, r.Version)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Fingerprint hashes the version tables and files of sets: the name of a
// database migrated from them (a test template) changes with any of them.
func Fingerprint(sets ...*Set) (string, error) {
	h := sha256.New()
	for _, s := range sets {
		h.Write([]byte(s.Table))
		names, err := fs.Glob(s.Files, "*.sql")
		if err != nil {
			return "", err
		}
		slices.Sort(names)
		for _, n := range names {
			b, err := fs.ReadFile(s.Files, n)
			if err != nil {
				return "", err
			}
			h.Write([]byte(n))
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}
