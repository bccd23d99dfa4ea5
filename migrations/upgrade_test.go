package migrations_test

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/migrations"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/schemaset"
)

// legacyFiles are outflow's migrations as they were before the schema was
// split in two, byte for byte: one goose sequence, 00001 to 00010, on
// goose's default table.
//
//go:embed testdata/legacy/*.sql
var legacyFiles embed.FS

// The versions each set records, goose's 0 first.
var (
	outboxVersions = []int64{0, 1, 2, 4, 6, 10, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}
	ordersVersions = []int64{0, 1, 2, 3, 5, 7, 8, 11}
)

// versionTables are the migration bookkeeping, left out of the schema and
// data comparisons (and compared on their own).
var versionTables = []string{"goose_db_version", "outflow_schema_version", migrations.OrdersVersionTable}

func emptyDB(t *testing.T) (context.Context, *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cfg, err := pgxpool.ParseConfig(testdb.NewEmptyURL(t))
	require.NoError(t, err)
	cfg.MaxConns = 4 // the server's 100 connections are shared
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return ctx, pool
}

// legacyUp migrates the database as outflow's binaries did before the
// split, up to version to.
func legacyUp(t *testing.T, ctx context.Context, pool *pgxpool.Pool, to int64) {
	t.Helper()
	sub, err := fs.Sub(legacyFiles, "testdata/legacy")
	require.NoError(t, err)
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithDisableGlobalRegistry(true))
	require.NoError(t, err)
	_, err = p.UpTo(ctx, to)
	require.NoError(t, err)
	current, err := p.GetDBVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, to, current)
}

func exec(t *testing.T, ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	_, err := pool.Exec(ctx, sql, args...)
	require.NoError(t, err, sql)
}

func queryStrings(t *testing.T, ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) []string {
	t.Helper()
	rows, err := pool.Query(ctx, sql, args...)
	require.NoError(t, err, sql)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err, sql)
	return out
}

// schemaOf describes everything the migrations make, for comparing two
// databases: columns (in order, with types, defaults, identity), every
// constraint, index, function, storage parameter and publication. The
// version tables are left out.
func schemaOf(t *testing.T, ctx context.Context, pool *pgxpool.Pool) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []struct {
		sql       string
		byVersion bool // $1 is versionTables
	}{
		{`SELECT format('column %s.%s #%s %s %s null=%s default=%s identity=%s',
		         table_name, column_name, ordinal_position, data_type, udt_name, is_nullable,
		         coalesce(column_default, '-'), coalesce(identity_generation, '-'))
		  FROM information_schema.columns
		  WHERE table_schema = current_schema() AND NOT table_name = ANY ($1)
		  ORDER BY table_name, ordinal_position`, true},
		{`SELECT format('constraint %s %s %s', conrelid::regclass, conname, pg_get_constraintdef(oid))
		  FROM pg_constraint
		  WHERE connamespace = current_schema()::regnamespace AND NOT conrelid::regclass::text = ANY ($1)
		  ORDER BY conrelid::regclass::text, conname`, true},
		{`SELECT format('index %s', indexdef)
		  FROM pg_indexes
		  WHERE schemaname = current_schema() AND NOT tablename = ANY ($1)
		  ORDER BY indexname`, true},
		{`SELECT format('storage %s %s', relname, reloptions)
		  FROM pg_class
		  WHERE relnamespace = current_schema()::regnamespace AND reloptions IS NOT NULL AND NOT relname = ANY ($1)
		  ORDER BY relname`, true},
		{`SELECT format('function %s', pg_get_functiondef(p.oid))
		  FROM pg_proc p
		  WHERE p.pronamespace = current_schema()::regnamespace
		  ORDER BY p.proname`, false},
		{`SELECT format('publication %s insert=%s update=%s delete=%s truncate=%s tables=%s',
		         p.pubname, p.pubinsert, p.pubupdate, p.pubdelete, p.pubtruncate,
		         (SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_publication_tables t WHERE t.pubname = p.pubname))
		  FROM pg_publication p
		  ORDER BY p.pubname`, false},
	} {
		var args []any
		if q.byVersion {
			args = append(args, versionTables)
		}
		for _, line := range queryStrings(t, ctx, pool, q.sql, args...) {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// fresh is the schema migrations.Up makes on an empty database, made once.
var fresh struct {
	once   sync.Once
	schema string
}

func freshSchema(t *testing.T) string {
	t.Helper()
	fresh.once.Do(func() {
		ctx, pool := emptyDB(t)
		if _, err := migrations.Up(ctx, pool, nil); err != nil {
			t.Errorf("migrate a fresh database: %v", err)
			return
		}
		fresh.schema = schemaOf(t, ctx, pool)
	})
	require.NotEmpty(t, fresh.schema, "the fresh database could not be migrated")
	return fresh.schema
}

// dataTables are the tables outside the version bookkeeping.
func dataTables(t *testing.T, ctx context.Context, pool *pgxpool.Pool) []string {
	t.Helper()
	return queryStrings(t, ctx, pool,
		`SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() AND NOT tablename = ANY ($1) ORDER BY 1`, versionTables)
}

// rowsAsText is every row of every data table as PostgreSQL prints it: the
// exact text of each value, json's whitespace and key order included.
func rowsAsText(t *testing.T, ctx context.Context, pool *pgxpool.Pool) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, table := range dataTables(t, ctx, pool) {
		out[table] = queryStrings(t, ctx, pool, `SELECT t::text FROM `+pgx.Identifier{table}.Sanitize()+` t ORDER BY 1`)
	}
	return out
}

// withNewColumns is rows (rowsAsText of a legacy database, whose versions
// end at 10) as they read once the migrations after it ran: the order
// app's 00011 added three nullable columns to orders (NULL, printed empty,
// on every old row); the outbox's 00012 added outbox_sequences.last_gate
// (0 on every old row) and the log source's tables, empty but for the
// sixteen partitions' cursor rows (listed by the server, which sorts them
// as rowsAsText does); its 00013 added outbox_bulk_retries.log_holds (0 on
// every old row); its 00014 made the log's range partitions, empty, and
// their bookkeeping (read back from the server: it records when they were
// made; outbox's TestLogRetentionMigratesADefaultPartition checks it); its
// 00015 added the empty outbox_log_relays; its 00016 added
// outbox_events.skip_published_at (NULL, printed empty, on every old row);
// its 00017 only a function; its 00018 the one row of outbox_source, poll
// (read back from the server: it records when it was made); its 00019
// outbox_events.trace_context (NULL, printed empty, on every old row); its
// 00021 the empty outbox_sink_breakers.
func withNewColumns(t *testing.T, ctx context.Context, pool *pgxpool.Pool, rows map[string][]string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for table, rs := range rows {
		for _, r := range rs {
			switch table {
			case "orders":
				r = strings.TrimSuffix(r, ")") + ",,,)"
			case "outbox_sequences", "outbox_bulk_retries":
				r = strings.TrimSuffix(r, ")") + ",0)"
			case "outbox_events":
				r = strings.TrimSuffix(r, ")") + ",,)"
			}
			out[table] = append(out[table], r)
		}
	}
	for _, table := range []string{"outbox_log", "outbox_log_r0", "outbox_log_r1", "outbox_log_r2", "outbox_log_holds", "outbox_log_skips", "outbox_log_relays", "outbox_sink_breakers"} {
		out[table] = []string{}
	}
	out["outbox_log_ranges"] = queryStrings(t, ctx, pool, `SELECT t::text FROM outbox_log_ranges t ORDER BY 1`)
	out["outbox_log_cursors"] = queryStrings(t, ctx, pool, `SELECT format('(%s,0,0,,,0,0,)', p) FROM generate_series(0, 15) p ORDER BY 1`)
	out["outbox_source"] = queryStrings(t, ctx, pool, `SELECT format('(t,poll,"%s",migration,"")', changed_at) FROM outbox_source`)
	return out
}

// rowsAsJSON is every row of every data table as a JSON object, for
// comparing rows whose table gained columns since.
func rowsAsJSON(t *testing.T, ctx context.Context, pool *pgxpool.Pool) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for _, table := range dataTables(t, ctx, pool) {
		for _, s := range queryStrings(t, ctx, pool, `SELECT to_jsonb(t)::text FROM `+pgx.Identifier{table}.Sanitize()+` t ORDER BY 1`) {
			var row map[string]any
			require.NoError(t, json.Unmarshal([]byte(s), &row))
			out[table] = append(out[table], row)
		}
	}
	return out
}

// requireRowsKept fails unless every table of before still has its rows
// in after, with every value they had (columns added since aside, and the
// columns of changed a backfill may correct).
func requireRowsKept(t *testing.T, before, after map[string][]map[string]any, changed map[string][]string) {
	t.Helper()
	canon := func(row map[string]any, cols map[string]any, table string) string {
		p := map[string]any{}
		for col := range cols {
			if !slices.Contains(changed[table], col) {
				p[col] = row[col]
			}
		}
		s, err := json.Marshal(p) // sorts the keys
		require.NoError(t, err)
		return string(s)
	}
	for table, rows := range before {
		got := after[table]
		require.Len(t, got, len(rows), "rows of %s", table)
		var want, have []string
		for i := range rows {
			want = append(want, canon(rows[i], rows[0], table))
			have = append(have, canon(got[i], rows[0], table))
		}
		require.ElementsMatch(t, want, have, "the rows of %s", table)
	}
}

// versionTable is a goose table's rows as recorded.
func versionTable(t *testing.T, ctx context.Context, pool *pgxpool.Pool, table string) []string {
	t.Helper()
	return queryStrings(t, ctx, pool, `SELECT format('%s %s %s %s', id, version_id, is_applied, tstamp) FROM `+pgx.Identifier{table}.Sanitize()+` ORDER BY id`)
}

func versionsIn(t *testing.T, ctx context.Context, pool *pgxpool.Pool, table string) []int64 {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT version_id FROM `+pgx.Identifier{table}.Sanitize()+` ORDER BY id`)
	require.NoError(t, err)
	v, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return v
}

// seedLegacy writes rows into every table of a database at legacy version
// 10, each in the states the code gives them: pending, retried, published,
// quarantined, skipped, replayed and leased events, an order in each
// projection state, an idempotent response whose JSON text is not
// normalised, the horizons, a customer key and its erasure's audit, a bulk
// retry's audit and inbox rows.
func seedLegacy(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	for _, q := range []string{
		`INSERT INTO orders (id, customer_email, currency, payment_method, amount, items, status, applied_sequence,
		                     created_event_id, created_sequence, shipping_address)
		 VALUES ('00000000-0000-0000-0000-00000000000a', 'ada@example.com', 'usd', 'pm_card_visa', 2500,
		         '[{"sku": "SKU-1", "quantity": 2, "unit_amount": 1250}]', 'pending', 0,
		         '10000000-0000-0000-0000-000000000001', 1, NULL)`,
		`INSERT INTO orders (id, customer_email, currency, payment_method, amount, items, status, applied_sequence,
		                     payment_intent_id, created_event_id, created_sequence, shipping_address)
		 VALUES ('00000000-0000-0000-0000-00000000000b', 'grace@example.com', 'eur', 'pm_card_visa', 990,
		         '[]', 'paid', 1, 'pi_123', '20000000-0000-0000-0000-000000000001', 1,
		         '{"name": "Grace", "line1": "1 Main St", "city": "Berlin", "postal_code": "10115", "country": "DE"}')`,
		`INSERT INTO orders (id, customer_email, currency, payment_method, amount, items, status, applied_sequence,
		                     payment_intent_id, refund_id, cancel_event_id, cancel_event_sequence, created_event_id,
		                     created_sequence, skipped_sequences)
		 VALUES ('00000000-0000-0000-0000-00000000000c', 'linus@example.com', 'usd', 'pm_card_visa', 100,
		         '[]', 'cancelled', 3, 'pi_456', 're_789', '30000000-0000-0000-0000-000000000003', 3,
		         '30000000-0000-0000-0000-000000000001', 1, '{2}')`,
		`INSERT INTO outbox_sequences (aggregate_type, aggregate_id, last_sequence) VALUES
		 ('order', '00000000-0000-0000-0000-00000000000a', 1),
		 ('order', '00000000-0000-0000-0000-00000000000b', 2),
		 ('order', '00000000-0000-0000-0000-00000000000c', 3)`,
		`INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type, schema_version,
		                           payload, occurred_at, available_at, attempt_count, last_error)
		 VALUES ('10000000-0000-0000-0000-000000000001', 'order', '00000000-0000-0000-0000-00000000000a', 1,
		         'OrderCreated', 2, '{"order_id": "a", "amount": 2500}', '2026-01-01T10:00:00Z', '2026-01-01T10:05:00Z',
		         2, 'temporal: unavailable')`,
		`INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type, schema_version,
		                           payload, occurred_at, published_at, claimed_by, claim_until, attempt_count)
		 VALUES ('20000000-0000-0000-0000-000000000001', 'order', '00000000-0000-0000-0000-00000000000b', 1,
		         'OrderCreated', 1, '{"order_id": "b"}', '2026-01-01T10:00:00Z', '2026-01-01T10:00:01Z',
		         'relay-1', '2026-01-01T10:00:31Z', 1)`,
		`INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type, schema_version,
		                           payload, attempt_count, last_error, quarantined_at)
		 VALUES ('20000000-0000-0000-0000-000000000002', 'order', '00000000-0000-0000-0000-00000000000b', 2,
		         'OrderCancelled', 1, '{}', 20, 'workflow type not registered', '2026-01-02T00:00:00Z')`,
		`INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type, schema_version,
		                           payload, published_at)
		 VALUES ('30000000-0000-0000-0000-000000000001', 'order', '00000000-0000-0000-0000-00000000000c', 1,
		         'OrderCreated', 1, '{}', '2026-01-01T10:00:01Z')`,
		`INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type, schema_version,
		                           payload, attempt_count, last_error, quarantined_at, skipped_at, skipped_by, skip_reason)
		 VALUES ('30000000-0000-0000-0000-000000000002', 'order', '00000000-0000-0000-0000-00000000000c', 2,
		         'OrderPaid', 1, '{}', 20, 'bad payload', '2026-01-02T00:00:00Z', '2026-01-02T01:00:00Z',
		         'ops@host', 'refunded by hand, OPS-1')`,
		`INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type, schema_version,
		                           payload, published_at, replay_requested_at, claimed_by, claim_until)
		 VALUES ('30000000-0000-0000-0000-000000000003', 'order', '00000000-0000-0000-0000-00000000000c', 3,
		         'OrderCancelled', 1, '{}', NULL, '2026-01-03T00:00:00Z', 'relay-2', '2099-01-01T00:00:00Z')`,
		`INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type, schema_version, payload)
		 VALUES ('40000000-0000-0000-0000-000000000001', 'invoice', 'inv-1', 1, 'InvoiceIssued', 1, '{"amount": 1}')`,
		`INSERT INTO processed_events (consumer_name, event_id, processed_at) VALUES
		 ('order_status.paid', '20000000-0000-0000-0000-000000000001', '2026-01-01T10:00:02Z'),
		 ('email.confirmation', '30000000-0000-0000-0000-000000000001', '2026-01-01T10:00:03Z')`,
		`INSERT INTO idempotency_keys (key, request_fingerprint, response_status, response_body, order_id)
		 VALUES ('key-1', '\xdeadbeef', 201, '{"order_id":"a",   "status": "pending"}', '00000000-0000-0000-0000-00000000000a')`,
		`INSERT INTO outbox_cleanup_horizon (deleted_before) VALUES ('2025-12-25T00:00:00Z')`,
		`INSERT INTO outbox_replay_horizon (horizon_ms, reason) VALUES (86400000, 'namespace retention 1 day')`,
		`INSERT INTO customer_keys (key_id, subject_hash, wrapped_dek, wrapping_key_id)
		 VALUES ('50000000-0000-0000-0000-000000000001', sha256('ada@example.com'), '\x0102', 'k1')`,
		`INSERT INTO customer_key_erasures (subject_hash, key_id, key_created_at, erased_by, reason)
		 VALUES (sha256('bob@example.com'), '50000000-0000-0000-0000-000000000002', '2025-01-01T00:00:00Z', 'ops@host', 'GDPR, PRIV-7')`,
		`INSERT INTO outbox_bulk_retries (finished_at, retried_by, reason, quarantined_since, error_contains, aggregate_type, events)
		 VALUES ('2026-01-02T00:10:00Z', 'ops@host', 'after the outage', '2026-01-01T00:00:00Z', 'unavailable', 'order', 12)`,
	} {
		exec(t, ctx, pool, q)
	}
	for _, table := range dataTables(t, ctx, pool) {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()).Scan(&n))
		require.NotZero(t, n, "the seed writes a row into every table; %s has none", table)
	}
}

// TestUpgradeFromTheLegacySchemaWithData: a database that today's outflow
// migrated (goose_db_version at 10) with rows in every table comes through
// migrations.Up with every row, every value and every constraint as it
// was, the schema exactly that of a fresh database, both sets' versions
// recorded in their own tables and goose_db_version untouched. Before the
// upgrade the binaries refuse it, naming the command.
func TestUpgradeFromTheLegacySchemaWithData(t *testing.T) {
	t.Parallel()
	ctx, pool := emptyDB(t)
	legacyUp(t, ctx, pool, 10)
	seedLegacy(t, ctx, pool)
	rowsBefore := rowsAsText(t, ctx, pool)
	schemaBefore := schemaOf(t, ctx, pool)
	legacyBefore := versionTable(t, ctx, pool, "goose_db_version")

	for _, check := range []func(context.Context, *pgxpool.Pool) error{migrations.Check, migrations.CheckOutbox} {
		err := check(ctx, pool)
		require.ErrorIs(t, err, migrations.ErrOutdated)
		require.ErrorIs(t, err, outbox.ErrSchemaOutdated)
		require.ErrorContains(t, err, "outboxctl migrate")
	}
	require.Equal(t, []string{"goose_db_version"}, queryStrings(t, ctx, pool,
		`SELECT tablename::text FROM pg_tables WHERE tablename = ANY ($1) ORDER BY 1`, versionTables), "the checks created nothing")

	report, err := migrations.Up(ctx, pool, nil)
	require.NoError(t, err)
	require.EqualValues(t, 10, report.Outbox.Adopted)
	require.Equal(t, above(outboxVersions, 10), report.Outbox.Applied, "the outbox's tables were all there but 00012's to 00021's")
	require.EqualValues(t, 21, report.Outbox.Version)
	require.EqualValues(t, 10, report.Orders.Adopted)
	require.Equal(t, above(ordersVersions, 10), report.Orders.Applied, "the order app's tables were all there but 00011's columns")
	require.EqualValues(t, 11, report.Orders.Version)
	require.Contains(t, strings.Join(report.Lines(), "\n"), "adopted from goose_db_version at version 10")

	require.Equal(t, withNewColumns(t, ctx, pool, rowsBefore), rowsAsText(t, ctx, pool), "every row and value survives")
	// The outbox's 00016 replaced the lane function's clause on skipped
	// predecessors: one held back until its tombstone is out.
	schemaBefore = strings.Replace(schemaBefore, "      AND p.skipped_at IS NULL\n$function$",
		"      AND (p.skipped_at IS NULL OR p.skip_published_at IS NULL)\n$function$", 1)
	require.Subset(t, strings.Split(schemaOf(t, ctx, pool), "\n"), strings.Split(schemaBefore, "\n"),
		"every column, constraint, index, function and the publication survive")
	require.Equal(t, freshSchema(t), schemaOf(t, ctx, pool), "an upgraded database is a fresh one")
	require.Equal(t, outboxVersions, versionsIn(t, ctx, pool, "outflow_schema_version"))
	require.Equal(t, ordersVersions, versionsIn(t, ctx, pool, migrations.OrdersVersionTable))
	require.Equal(t, legacyBefore, versionTable(t, ctx, pool, "goose_db_version"), "goose_db_version is read, never written")
	require.NoError(t, migrations.Check(ctx, pool))
	require.NoError(t, migrations.CheckOutbox(ctx, pool))

	// The constraints still hold, not only their definitions.
	for _, c := range []struct {
		sql  string
		code string
	}{
		{`INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type, schema_version, payload)
		  VALUES (gen_random_uuid(), 'order', '00000000-0000-0000-0000-00000000000b', 2, 'X', 1, '{}')`, "23505"},
		{`UPDATE orders SET currency = 'USD' WHERE id = '00000000-0000-0000-0000-00000000000a'`, "23514"},
		{`INSERT INTO idempotency_keys (key, request_fingerprint, response_status, response_body, order_id)
		  VALUES ('key-2', '\x00', 201, '{}', gen_random_uuid())`, "23503"},
		{`INSERT INTO outbox_replay_horizon (singleton, horizon_ms, reason) VALUES (false, 1, 'x')`, "23514"},
	} {
		_, err := pool.Exec(ctx, c.sql)
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%s: %v", c.sql, err)
		require.Equal(t, c.code, pgErr.Code, c.sql)
	}

	again, err := migrations.Up(ctx, pool, nil)
	require.NoError(t, err)
	require.Zero(t, again.Outbox.Adopted)
	require.Empty(t, again.Outbox.Applied)
	require.Zero(t, again.Orders.Adopted)
	require.Empty(t, again.Orders.Applied)
	require.Equal(t, outboxVersions, versionsIn(t, ctx, pool, "outflow_schema_version"))
	require.Equal(t, ordersVersions, versionsIn(t, ctx, pool, migrations.OrdersVersionTable))
}

// TestUpgradeFromEveryLegacyVersion: a database left at any older legacy
// version, with an order and its events, is adopted at that version and
// brought to the fresh schema by the migrations it lacked, its rows kept.
// The order app's 00007 then backfills from the outbox's rows it adopted:
// an order stalled behind a skipped event flows again.
func TestUpgradeFromEveryLegacyVersion(t *testing.T) {
	t.Parallel()
	want := freshSchema(t)
	for n := int64(1); n < 10; n++ {
		t.Run(fmt.Sprintf("version %d", n), func(t *testing.T) {
			t.Parallel()
			ctx, pool := emptyDB(t)
			legacyUp(t, ctx, pool, n)
			order := "00000000-0000-0000-0000-0000000000aa"
			exec(t, ctx, pool, `INSERT INTO orders (id, customer_email, currency, payment_method, amount, items, created_event_id, applied_sequence)
				VALUES ($1, 'ada@example.com', 'usd', 'pm_card_visa', 2500, '[]', '60000000-0000-0000-0000-000000000001', 1)`, order)
			exec(t, ctx, pool, `INSERT INTO outbox_sequences (aggregate_type, aggregate_id, last_sequence) VALUES ('order', $1, 3)`, order)
			exec(t, ctx, pool, `INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type, schema_version, payload, published_at, skipped_at)
				VALUES ('60000000-0000-0000-0000-000000000001', 'order', $1, 1, 'OrderCreated', 1, '{}', now(), NULL),
				       ('60000000-0000-0000-0000-000000000002', 'order', $1, 2, 'OrderPaid', 1, '{}', NULL, now()),
				       ('60000000-0000-0000-0000-000000000003', 'order', $1, 3, 'OrderCancelled', 1, '{}', NULL, NULL)`, order)
			exec(t, ctx, pool, `INSERT INTO processed_events (consumer_name, event_id) VALUES ('order_status.created', '60000000-0000-0000-0000-000000000001')`)
			exec(t, ctx, pool, `INSERT INTO idempotency_keys (key, request_fingerprint, response_status, response_body, order_id)
				VALUES ('key-1', '\x01', 201, '{"order_id": "aa"}', $1)`, order)
			before := rowsAsJSON(t, ctx, pool)

			report, err := migrations.Up(ctx, pool, nil)
			require.NoError(t, err)
			require.Equal(t, n, report.Outbox.Adopted)
			require.Equal(t, n, report.Orders.Adopted)
			require.Equal(t, above(outboxVersions, n), report.Outbox.Applied)
			require.Equal(t, above(ordersVersions, n), report.Orders.Applied)
			require.Equal(t, outboxVersions, sorted(versionsIn(t, ctx, pool, "outflow_schema_version")))
			require.Equal(t, ordersVersions, sorted(versionsIn(t, ctx, pool, migrations.OrdersVersionTable)))
			require.Equal(t, want, schemaOf(t, ctx, pool))
			var changed map[string][]string
			if n < 7 {
				changed = map[string][]string{"orders": {"applied_sequence"}} // checked below
			}
			requireRowsKept(t, before, rowsAsJSON(t, ctx, pool), changed)

			var applied int64
			var skipped []int64
			require.NoError(t, pool.QueryRow(ctx, `SELECT applied_sequence, skipped_sequences FROM orders WHERE id = $1`, order).Scan(&applied, &skipped))
			if n < 7 {
				require.Equal(t, []int64{2}, skipped, "00007 backfilled the skip it found in the adopted outbox")
				require.EqualValues(t, 2, applied)
			}
			require.NoError(t, migrations.Check(ctx, pool))
		})
	}
}

func above(versions []int64, n int64) []int64 {
	var out []int64
	for _, v := range versions {
		if v > n {
			out = append(out, v)
		}
	}
	return out
}

func sorted(v []int64) []int64 { slices.Sort(v); return v }

// TestUpgradeConcurrently: two deploys migrating one legacy database at once
// adopt it once and record each version once.
func TestUpgradeConcurrently(t *testing.T) {
	t.Parallel()
	ctx, pool := emptyDB(t)
	legacyUp(t, ctx, pool, 6)
	var wg sync.WaitGroup
	reports := make([]migrations.Report, 2)
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { reports[i], errs[i] = migrations.Up(ctx, pool, nil) })
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.ElementsMatch(t, []int64{6, 0}, []int64{reports[0].Outbox.Adopted, reports[1].Outbox.Adopted}, "adopted once")
	require.Equal(t, outboxVersions, sorted(versionsIn(t, ctx, pool, "outflow_schema_version")))
	require.Equal(t, ordersVersions, sorted(versionsIn(t, ctx, pool, migrations.OrdersVersionTable)))
	require.Equal(t, freshSchema(t), schemaOf(t, ctx, pool))
}

// TestOutboxOnlyDatabase: UpOutbox leaves the order app out; the outbox's
// binaries accept such a database and the order app's refuse it. Where the
// order app's schema exists, the outbox's binaries need it current too.
func TestOutboxOnlyDatabase(t *testing.T) {
	t.Parallel()
	ctx, pool := emptyDB(t)
	err := migrations.CheckOutbox(ctx, pool)
	require.ErrorIs(t, err, migrations.ErrOutdated)
	require.ErrorContains(t, err, "run `outboxctl migrate` against this DATABASE_URL")

	report, err := migrations.UpOutbox(ctx, pool, nil)
	require.NoError(t, err)
	require.False(t, report.OrdersApplied)
	require.Len(t, report.Lines(), 1)
	require.NotContains(t, dataTables(t, ctx, pool), "orders")
	require.NoError(t, migrations.CheckOutbox(ctx, pool))
	err = migrations.Check(ctx, pool)
	require.ErrorIs(t, err, migrations.ErrOutdated)
	require.NotErrorIs(t, err, outbox.ErrSchemaOutdated, "only the order app's schema is missing")
	require.ErrorContains(t, err, "the order app schema ("+migrations.OrdersVersionTable+") is at version 0, this binary needs 11")

	_, err = migrations.Up(ctx, pool, nil)
	require.NoError(t, err)
	require.NoError(t, migrations.Check(ctx, pool))
	exec(t, ctx, pool, `DELETE FROM `+migrations.OrdersVersionTable+` WHERE version_id = 11`)
	err = migrations.CheckOutbox(ctx, pool)
	require.ErrorIs(t, err, migrations.ErrOutdated)
	require.ErrorContains(t, err, "is at version 8, this binary needs 11")
}

// TestSetsKeepTheLegacyNumbers: the two sets' files number one sequence.
// Up to the split they are the legacy versions, 00001 and 00002 (which made
// tables of both) in each set, every other one in exactly one and 00009 (the
// publication, kept by the outbox's 00020 now) in neither, so adopting a legacy
// database at N records exactly the files up to N; after it, a version is
// in one set only, so a number names one change.
func TestSetsKeepTheLegacyNumbers(t *testing.T) {
	t.Parallel()
	legacy, err := fs.Glob(legacyFiles, "testdata/legacy/*.sql")
	require.NoError(t, err)
	require.Len(t, legacy, schemaset.LegacyMaxVersion)
	count := map[int64]int{}
	for _, table := range []string{"outflow_schema_version", migrations.OrdersVersionTable} {
		versions, err := schemaset.Lookup(table).Versions()
		require.NoError(t, err)
		for _, v := range versions {
			count[v]++
		}
	}
	for v, n := range count {
		switch {
		case v <= 2:
			require.Equal(t, 2, n, "version %d", v)
		default:
			require.Equal(t, 1, n, "version %d is in both sets; take the next number after the highest of both", v)
		}
	}
	for v := int64(1); v <= schemaset.LegacyMaxVersion; v++ {
		if v == 9 {
			require.Zero(t, count[v], "version 9 was the publication")
			continue
		}
		require.NotZero(t, count[v], "legacy version %d belongs to a set", v)
	}
}

// TestUpgradeOneSetAtATime: a legacy database whose outbox a service
// migrated first (outbox.Migrate alone) keeps its order app's tables for
// the order app's own adoption later.
func TestUpgradeOneSetAtATime(t *testing.T) {
	t.Parallel()
	ctx, pool := emptyDB(t)
	legacyUp(t, ctx, pool, 10)
	seedLegacy(t, ctx, pool)
	before := rowsAsText(t, ctx, pool)

	require.NoError(t, outbox.Migrate(ctx, pool))
	require.Equal(t, outboxVersions, versionsIn(t, ctx, pool, "outflow_schema_version"))
	err := migrations.Check(ctx, pool)
	require.ErrorIs(t, err, migrations.ErrOutdated)
	require.NotErrorIs(t, err, outbox.ErrSchemaOutdated)

	report, err := migrations.Up(ctx, pool, nil)
	require.NoError(t, err)
	require.Zero(t, report.Outbox.Adopted)
	require.EqualValues(t, 10, report.Orders.Adopted)
	require.Equal(t, above(ordersVersions, 10), report.Orders.Applied)
	require.Equal(t, ordersVersions, versionsIn(t, ctx, pool, migrations.OrdersVersionTable))
	require.Equal(t, withNewColumns(t, ctx, pool, before), rowsAsText(t, ctx, pool))
	require.Equal(t, freshSchema(t), schemaOf(t, ctx, pool))
}
