// Package migrations holds the order app's versioned schema and brings a
// whole outflow database up to date with pressly/goose.
//
// An outflow database holds two migration sets, each with a version table
// of its own and neither goose's default goose_db_version (a team's own
// goose may use that one):
//
//   - the outbox's own tables (outbox_events, outbox_sequences,
//     processed_events, outbox_cleanup_horizon, outbox_replay_horizon,
//     outbox_bulk_retries), embedded in package outbox and applied by
//     outbox.Migrate, versions in outflow_schema_version, and the cdc
//     relay source's publication;
//   - the order app's tables (orders, idempotency_keys, customer_keys,
//     customer_key_erasures), the files of this package, versions in
//     [OrdersVersionTable]. Their backfills read outbox_events, so they run
//     after the outbox's.
//
// [Up] applies both (`outboxctl migrate --order-app`, and `outboxctl
// migrate` where the order app's schema is installed), [UpOutbox] only
// the outbox's (`outboxctl migrate` on any other database); [Check] and [CheckOutbox] are the
// binaries' start-up checks. A database migrated before the split (one
// goose_db_version holding versions 1 to 10) is adopted in place: see
// package outbox/schemaset.
//
// goose was chosen over jackc/tern because its Provider API takes an fs.FS
// and a store on any version table, and reports pending versions without
// applying them (so every binary can refuse an outdated schema at start),
// and it rejects duplicate versions when it collects the files.
package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	_ "github.com/outflow/outflow/outbox" // registers the outbox's schema set, which outboxSet looks up
	"github.com/outflow/outflow/outbox/schemaset"
)

//go:embed *.sql
var files embed.FS

// OrdersVersionTable records the versions of the order app's migrations.
const OrdersVersionTable = "outflow_orders_schema_version"

// outboxVersionTable is the outbox's own, written by outbox.Migrate.
const outboxVersionTable = "outflow_schema_version"

// FS returns the order app's embedded migration files.
func FS() fs.FS { return files }

// ErrOutdated is returned by [Check] and [CheckOutbox] when the database is
// behind the schema this binary was built with.
var ErrOutdated = errors.New("database schema is outdated")

// fixCommand is what an outdated-schema message tells the operator of the
// order app's binaries, which need both sets.
const fixCommand = "run `outboxctl migrate --order-app` (go run ./cmd/outboxctl migrate --order-app) against this DATABASE_URL"

// fixOutboxOnly is the message's command where the order app's schema was
// not found: a team's database, or outflow's before its first migrate.
const fixOutboxOnly = "run `outboxctl migrate` against this DATABASE_URL (it migrates the outbox alone on a database without outflow's order app; its outbox.Migrate does the same), or `outboxctl migrate --order-app` if it is to be the order service's database"

var orders = schemaset.Register(&schemaset.Set{
	Name:         "order app",
	Table:        OrdersVersionTable,
	Files:        files,
	LegacyTables: []string{"orders", "idempotency_keys"},
	Fix:          fixCommand,
})

// outboxSet is the outbox's set, registered by package outbox: run through
// it rather than outbox.Migrate, outboxctl can report what was adopted and
// applied.
func outboxSet() *schemaset.Set { return schemaset.Lookup(outboxVersionTable) }

// Report is what [Up] or [UpOutbox] did, set by set.
type Report struct {
	// Outbox is what the outbox's set did (the publication exists after it).
	Outbox schemaset.Result
	// Orders is what the order app's set did; the zero Result after UpOutbox.
	Orders schemaset.Result
	// OrdersApplied is false after UpOutbox.
	OrdersApplied bool
}

// Lines describes the report for an operator, one line per set: "applied
// 3 migrations: 00001_init.sql, ...; now at version 3", or "already up to
// date at version N".
func (r Report) Lines() []string {
	out := []string{outboxSet().Describe(r.Outbox)}
	if r.OrdersApplied {
		out = append(out, orders.Describe(r.Orders))
	}
	return out
}

// Up brings a whole outflow database up to date: the outbox's schema and
// its CDC publication, then the order app's. Concurrent callers are
// serialised by each set's advisory lock. logger, when not nil, hears each
// migration applied.
func Up(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) (Report, error) {
	r, err := UpOutbox(ctx, pool, logger)
	if err != nil {
		return r, err
	}
	if r.Orders, err = orders.Up(ctx, pool, logger); err != nil {
		return r, err
	}
	r.OrdersApplied = true
	return r, nil
}

// UpOutbox applies only the outbox's schema (its cdc publication too): what
// the relay (starter) and outboxctl need on a database that holds a team's
// own tables instead of the order app's.
func UpOutbox(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) (Report, error) {
	var r Report
	var err error
	if r.Outbox, err = outboxSet().Up(ctx, pool, logger); err != nil {
		return r, err
	}
	return r, nil
}

// OrdersInstalled reports whether the database holds the order app's
// schema (its version table, or its tables from before the split).
func OrdersInstalled(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	return orders.Installed(ctx, pool)
}

// Check returns an error wrapping [ErrOutdated] that names the command to
// run when either set is behind this binary: for the order app's binaries
// (orderapi, worker, codecserver), which need both.
func Check(ctx context.Context, pool *pgxpool.Pool) error {
	return check(ctx, pool, true)
}

// CheckOutbox is [Check] for a binary that needs only the outbox's schema
// (the starter, outboxctl): the order app's is checked too where this
// database has it, since such a binary then also touches it (the payload
// codec's customer keys, a skipped order's projection, forget-customer),
// and ignored where it does not (a team's database).
func CheckOutbox(ctx context.Context, pool *pgxpool.Pool) error {
	return check(ctx, pool, false)
}

func check(ctx context.Context, pool *pgxpool.Pool, needOrders bool) error {
	var outdated []*schemaset.OutdatedError
	collect := func(err error) error {
		var o *schemaset.OutdatedError
		if errors.As(err, &o) {
			outdated = append(outdated, o)
			return nil
		}
		return err
	}
	if err := collect(outboxSet().Check(ctx, pool)); err != nil {
		return fmt.Errorf("migrations: reading the outbox schema's version: %w", err)
	}
	fix := fixCommand
	checkOrders := needOrders
	if !needOrders {
		installed, err := orders.Installed(ctx, pool)
		if err != nil {
			return fmt.Errorf("migrations: looking for the order app's schema: %w", err)
		}
		checkOrders = installed
		if !installed {
			// Perhaps a team's database: the whole of outflow's schema would
			// add the order app's tables to it.
			fix = fixOutboxOnly
		}
	}
	if checkOrders {
		if err := collect(orders.Check(ctx, pool)); err != nil {
			return fmt.Errorf("migrations: reading the order app schema's version: %w", err)
		}
	}
	if len(outdated) == 0 {
		return nil
	}
	return &outdatedError{sets: outdated, fix: fix}
}

// outdatedError lists every outdated set and names one command for all.
type outdatedError struct {
	sets []*schemaset.OutdatedError
	fix  string
}

func (e *outdatedError) Error() string {
	parts := make([]string, len(e.sets))
	for i, s := range e.sets {
		parts[i] = fmt.Sprintf("the %s schema (%s) is at version %d, this binary needs %d", s.Set.Name, s.Set.Table, s.Current, s.Target)
	}
	return fmt.Sprintf("%v: %s; %s", ErrOutdated, strings.Join(parts, "; "), e.fix)
}

// Unwrap makes errors.Is find ErrOutdated and, through each set's error,
// the set's own sentinel (outbox.ErrSchemaOutdated).
func (e *outdatedError) Unwrap() []error {
	out := []error{ErrOutdated}
	for _, s := range e.sets {
		out = append(out, s)
	}
	return out
}
