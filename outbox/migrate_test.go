package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// outboxVersions are the versions Migrate records: the numbers of outflow's
// single sequence the outbox's migrations were cut from, and goose's 0.
var outboxVersions = []int64{0, 1, 2, 4, 6, 10, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}

// outboxTables are every table of the outbox's schema and its version table.
var outboxTables = []string{
	"outbox_bulk_retries", "outbox_cleanup_horizon", "outbox_events", "outbox_log", "outbox_log_cursors",
	"outbox_log_holds", "outbox_log_r0", "outbox_log_r1", "outbox_log_r2", "outbox_log_ranges", "outbox_log_relays", "outbox_log_skips",
	"outbox_replay_horizon",
	"outbox_sequences", "outbox_sink_breakers", "outbox_source", "outflow_schema_version", "processed_events",
}

// emptyDB is a database with no schema at all, for the migration tests.
func emptyDB(t *testing.T) (context.Context, *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx, testdb.Open(t, testdb.NewEmptyURL(t))
}

// tablesOf lists the tables of the database's current schema.
func tablesOf(t *testing.T, ctx context.Context, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename COLLATE "C"`)
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return names
}

// versionRows returns a goose version table's versions in the order they
// were recorded.
func versionRows(t *testing.T, ctx context.Context, pool *pgxpool.Pool, table string) []int64 {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT version_id FROM `+pgx.Identifier{table}.Sanitize()+` ORDER BY id`)
	require.NoError(t, err)
	v, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return v
}

// TestMigrateAppliesOnlyTheOutboxSchema: on an empty database Migrate makes
// the outbox's tables, the cdc source's publication and no order app
// table and no goose_db_version; CheckSchema refuses the database before (without creating
// anything) and accepts it after; a second Migrate changes nothing.
func TestMigrateAppliesOnlyTheOutboxSchema(t *testing.T) {
	t.Parallel()
	ctx, pool := emptyDB(t)

	err := outbox.CheckSchema(ctx, pool)
	require.ErrorIs(t, err, outbox.ErrSchemaOutdated)
	require.ErrorContains(t, err, "outflow_schema_version")
	require.ErrorContains(t, err, "outbox.Migrate")
	require.Empty(t, tablesOf(t, ctx, pool), "the check only reads")

	require.NoError(t, outbox.Migrate(ctx, pool))
	require.Equal(t, outboxTables, tablesOf(t, ctx, pool))
	require.Equal(t, outboxVersions, versionRows(t, ctx, pool, "outflow_schema_version"))
	rows, err := pool.Query(ctx, `SELECT pubname FROM pg_publication ORDER BY 1`)
	require.NoError(t, err)
	publications, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{outboxops.CDCPublicationDefault}, publications, "the cdc source's publication, and no other")
	require.NoError(t, outbox.CheckSchema(ctx, pool))

	require.NoError(t, outbox.Migrate(ctx, pool))
	require.Equal(t, outboxVersions, versionRows(t, ctx, pool, "outflow_schema_version"), "nothing applied twice")

	// The outbox works on it: an event enqueued in the caller's transaction.
	ev, err := outbox.NewEvent("invoice", "inv-1", "InvoiceIssued", 1, map[string]any{"amount": 100})
	require.NoError(t, err)
	var got []outbox.Event
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		got, err = outbox.Enqueue(ctx, tx, ev)
		return err
	}))
	require.EqualValues(t, 1, got[0].Sequence)
}

// TestMigrateConcurrently: replicas that start at once migrate one after
// the other, and each migration is applied and recorded once.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	ctx, pool := emptyDB(t)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { errs[i] = outbox.Migrate(ctx, pool) })
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Equal(t, outboxVersions, versionRows(t, ctx, pool, "outflow_schema_version"))
	require.NoError(t, outbox.CheckSchema(ctx, pool))
}

// TestMigrateCreatesThePublication: the publication the cdc source
// streams, of outbox_events inserts only, created once however often asked.
func TestMigrateCreatesThePublication(t *testing.T) {
	t.Parallel()
	ctx, pool := emptyDB(t)
	for range 2 {
		require.NoError(t, outbox.Migrate(ctx, pool))
	}
	var insert, update, del, truncate bool
	var tables string
	require.NoError(t, pool.QueryRow(ctx, `
		SELECT p.pubinsert, p.pubupdate, p.pubdelete, p.pubtruncate, string_agg(t.tablename, ',')
		FROM pg_publication p JOIN pg_publication_tables t USING (pubname)
		WHERE p.pubname = $1
		GROUP BY 1, 2, 3, 4`, outboxops.CDCPublicationDefault).Scan(&insert, &update, &del, &truncate, &tables))
	require.Equal(t, []bool{true, false, false, false}, []bool{insert, update, del, truncate})
	require.Equal(t, "outbox_events", tables)
	require.Equal(t, outboxVersions, versionRows(t, ctx, pool, "outflow_schema_version"))
}

// teamGoose runs a team's own goose migrations, on goose's default table,
// as a service that adopts the outbox would.
type teamGoose struct {
	t     *testing.T
	ctx   context.Context
	pool  *pgxpool.Pool
	files fstest.MapFS
}

// add writes the team's migration version, which makes a table of its own.
func (g *teamGoose) add(version int64) {
	table := fmt.Sprintf("team_table_%d", version)
	g.files[fmt.Sprintf("%d_team.sql", version)] = &fstest.MapFile{Data: []byte(
		"-- +goose Up\nCREATE TABLE " + table + " (id bigint PRIMARY KEY);\n-- +goose Down\nDROP TABLE " + table + ";\n")}
}

// up applies the team's pending migrations and returns their versions.
func (g *teamGoose) up() []int64 {
	g.t.Helper()
	db := stdlib.OpenDBFromPool(g.pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, g.files, goose.WithDisableGlobalRegistry(true))
	require.NoError(g.t, err)
	results, err := p.Up(g.ctx)
	require.NoError(g.t, err, "the team's goose")
	var applied []int64
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	return applied
}

// TestMigrateBesideATeamsGoose: a team's goose on goose_db_version and the
// outbox's Migrate on one database, in either order, never see each other's
// versions: each applies exactly its own migrations, those added later
// too, with timestamp versions (which outflow's old shared table rejected as
// out of order) and with small integers (which it took for its own).
func TestMigrateBesideATeamsGoose(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		initial []int64
		later   int64
	}{
		{"timestamps", []int64{20240101120000, 20240301120000}, 20240401120000},
		{"small integers", []int64{1, 2, 3}, 4},
	} {
		for _, teamFirst := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/team first %v", tc.name, teamFirst), func(t *testing.T) {
				t.Parallel()
				ctx, pool := emptyDB(t)
				team := &teamGoose{t: t, ctx: ctx, pool: pool, files: fstest.MapFS{}}
				for _, v := range tc.initial {
					team.add(v)
				}
				if teamFirst {
					require.Equal(t, tc.initial, team.up())
				}
				require.NoError(t, outbox.Migrate(ctx, pool))
				if !teamFirst {
					require.Equal(t, tc.initial, team.up(), "none of the team's versions counted as applied")
				}
				require.Equal(t, outboxVersions, versionRows(t, ctx, pool, "outflow_schema_version"))
				require.Equal(t, append([]int64{0}, tc.initial...), versionRows(t, ctx, pool, goose.DefaultTablename))

				team.add(tc.later)
				require.Equal(t, []int64{tc.later}, team.up())
				require.NoError(t, outbox.Migrate(ctx, pool))
				require.NoError(t, outbox.CheckSchema(ctx, pool))
				require.Equal(t, outboxVersions, versionRows(t, ctx, pool, "outflow_schema_version"))
				require.Equal(t, append(append([]int64{0}, tc.initial...), tc.later), versionRows(t, ctx, pool, goose.DefaultTablename))

				tables := tablesOf(t, ctx, pool)
				for _, table := range outboxTables {
					require.Contains(t, tables, table)
				}
				for _, v := range append(tc.initial, tc.later) {
					require.Contains(t, tables, fmt.Sprintf("team_table_%d", v))
				}
			})
		}
	}
}

// TestMigrateRefusesOutboxTablesItDidNotMake: outbox tables that outflow's
// migrations did not make (a team's copy, beside the team's own goose
// versions) are not adopted under a guessed version; Migrate says what it
// found and writes nothing.
func TestMigrateRefusesOutboxTablesItDidNotMake(t *testing.T) {
	t.Parallel()
	ctx, pool := emptyDB(t)
	team := &teamGoose{t: t, ctx: ctx, pool: pool, files: fstest.MapFS{}}
	team.add(20240101120000)
	team.files["20240201120000_copied_outbox.sql"] = &fstest.MapFile{Data: []byte(
		"-- +goose Up\nCREATE TABLE outbox_events (event_id uuid PRIMARY KEY);\n-- +goose Down\nDROP TABLE outbox_events;\n")}
	team.up()

	err := outbox.Migrate(ctx, pool)
	require.ErrorContains(t, err, "outbox_events")
	require.ErrorContains(t, err, "goose_db_version holds versions 20240101120000,20240201120000")
	require.ErrorContains(t, err, "outflow did not make these tables")
	require.NotContains(t, tablesOf(t, ctx, pool), "outflow_schema_version")
}
