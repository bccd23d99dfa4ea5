package outboxops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestRetryAndSkipRules: which states retry and skip accept, and what they
// write. Retry works on quarantined and backing-off events; skip only on
// quarantined ones; both refuse published, skipped and unknown events with
// errors that say what to do.
func TestRetryAndSkipRules(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	evs := testdb.Enqueue(t, pool, testdb.Event(t, "q", "One"))
	backing := testdb.Enqueue(t, pool, testdb.Event(t, "b", "One"))[0]
	pub := testdb.Enqueue(t, pool, testdb.Event(t, "p", "One"))[0]
	leased := testdb.Enqueue(t, pool, testdb.Event(t, "l", "One"))[0]
	q := evs[0]
	_, err := pool.Exec(ctx, `UPDATE outbox_events SET quarantined_at = now(), attempt_count = 20, last_error = 'boom' WHERE event_id = $1`, q.ID)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE outbox_events SET available_at = now() + interval '1 hour', attempt_count = 4, last_error = 'flaky' WHERE event_id = $1`, backing.ID)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE outbox_events SET published_at = now() WHERE event_id = $1`, pub.ID)
	require.NoError(t, err)

	// Skip refuses what is not quarantined, and needs a reason.
	_, err = outboxops.Skip(ctx, pool, backing.ID, "why", "ops")
	require.ErrorIs(t, err, outboxops.ErrEventState)
	require.ErrorContains(t, err, "backing_off, not quarantined")
	_, err = outboxops.Skip(ctx, pool, q.ID, "  ", "ops")
	require.ErrorContains(t, err, "reason is mandatory")
	_, err = outboxops.Skip(ctx, pool, uuid.New(), "why", "ops")
	require.ErrorIs(t, err, outbox.ErrEventNotFound)

	// Retry: quarantined and backing-off events become available now.
	for _, id := range []uuid.UUID{q.ID, backing.ID} {
		c, err := outboxops.Retry(ctx, pool, id)
		require.NoError(t, err)
		require.Contains(t, []outboxops.EventState{outboxops.StateQuarantined, outboxops.StateBackingOff}, c.Before.State)
		require.Equal(t, outboxops.StatePending, c.After.State)
		require.Equal(t, 0, c.After.Attempts)
		require.Nil(t, c.After.QuarantinedAt)
		require.NotEmpty(t, c.After.LastError, "the last error is kept for the record")
		require.False(t, c.After.AvailableAt.After(time.Now().Add(time.Second)))
	}
	outboxtest.Force(t, pool, outboxtest.Match{ID: leased.ID}, outboxtest.SetLeased("relay-x", time.Hour))
	rec := &outboxtest.Recorder{}
	stop := outboxtest.RunRelay(t, pool, rec, outbox.RelayConfig{})
	require.ElementsMatch(t, []uuid.UUID{q.ID, backing.ID}, ids(rec.Wait(t, 2, 10*time.Second)), "retried events are published at once")
	stop()

	_, err = outboxops.Retry(ctx, pool, pub.ID)
	require.ErrorIs(t, err, outboxops.ErrEventState)
	require.ErrorContains(t, err, "use replay")
	_, err = outboxops.Retry(ctx, pool, uuid.New())
	require.ErrorIs(t, err, outbox.ErrEventNotFound)
	_, err = outboxops.Retry(ctx, pool, leased.ID)
	require.ErrorIs(t, err, outboxops.ErrEventState, "a leased event is being published: retry refuses")
	require.ErrorContains(t, err, "publishing it right now")
}

// TestSkipTxJoinsTheCallersTransaction: a skip rolled back with the caller's
// transaction leaves nothing behind.
func TestSkipTxJoinsTheCallersTransaction(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	e := testdb.Enqueue(t, pool, testdb.Event(t, "s", "One"))[0]
	_, err := pool.Exec(ctx, `UPDATE outbox_events SET quarantined_at = now() WHERE event_id = $1`, e.ID)
	require.NoError(t, err)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = outboxops.SkipTx(ctx, tx, e.ID, "testing", "ops")
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	l, err := outboxops.List(ctx, pool, outboxops.ListOptions{Quarantined: true})
	require.NoError(t, err)
	require.Len(t, l, 1)
	require.Equal(t, outboxops.StateQuarantined, l[0].State)
}

// bulkRetryBundle is a database with one event in each state a bulk retry
// must tell apart, and a way to see what it changed.
type bulkRetryBundle struct {
	pool *pgxpool.Pool
	// Quarantined events: old (two hours ago, order, sink unavailable),
	// route (ten minutes ago, order, its own fault) and invoice (ten
	// minutes ago, invoice, sink unavailable).
	old, route, invoice outbox.Event
	// Never to be touched: skipped (quarantined, then skipped), published,
	// publishedQ (published, with a quarantine left on the row), leased
	// (quarantined under a live lease) and backing (backing off).
	skipped, published, publishedQ, leased, backing outbox.Event
}

func setupBulkRetry(t *testing.T) *bulkRetryBundle {
	t.Helper()
	b := &bulkRetryBundle{pool: setup(t)}
	one := func(agg string) outbox.Event { return testdb.Enqueue(t, b.pool, testdb.Event(t, agg, "One"))[0] }
	b.old, b.route, b.skipped, b.published, b.publishedQ, b.leased, b.backing =
		one("old"), one("route"), one("skipped"), one("published"), one("published-q"), one("leased"), one("backing")
	inv, err := outbox.NewEvent("invoice", "inv-1", "InvoiceIssued", 1, map[string]string{"invoice_id": "inv-1"})
	require.NoError(t, err)
	b.invoice = testdb.Enqueue(t, b.pool, inv)[0]
	for _, s := range []struct {
		e   outbox.Event
		sql string
	}{
		{b.old, `quarantined_at = now() - interval '2 hours', attempt_count = 4, last_error = 'temporalpub: rpc error: code = Unavailable desc = connection refused'`},
		{b.route, `quarantined_at = now() - interval '10 minutes', attempt_count = 1, last_error = 'no route for event type One'`},
		{b.invoice, `quarantined_at = now() - interval '9 minutes', attempt_count = 4, last_error = 'rpc error: code = UNAVAILABLE'`},
		{b.skipped, `quarantined_at = now() - interval '1 hour', attempt_count = 4, last_error = 'Unavailable', skipped_at = now(), skipped_by = 'ops', skip_reason = 'refunded by hand'`},
		{b.published, `published_at = now(), attempt_count = 2, last_error = 'Unavailable'`},
		{b.publishedQ, `published_at = now(), quarantined_at = now() - interval '1 hour', attempt_count = 4, last_error = 'Unavailable'`},
		{b.leased, `quarantined_at = now() - interval '1 hour', attempt_count = 4, last_error = 'Unavailable', claimed_by = 'relay-x', claim_until = now() + interval '1 hour'`},
		{b.backing, `available_at = now() + interval '1 hour', attempt_count = 3, last_error = 'Unavailable'`},
	} {
		_, err := b.pool.Exec(context.Background(), `UPDATE outbox_events SET `+s.sql+` WHERE event_id = $1`, s.e.ID)
		require.NoError(t, err)
	}
	return b
}

// rows returns every event's row as JSON, by event id.
func (b *bulkRetryBundle) rows(t *testing.T) map[uuid.UUID]string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT event_id, to_jsonb(e)::text FROM outbox_events e`)
	require.NoError(t, err)
	out := map[uuid.UUID]string{}
	for rows.Next() {
		var id uuid.UUID
		var js string
		require.NoError(t, rows.Scan(&id, &js))
		out[id] = js
	}
	require.NoError(t, rows.Err())
	return out
}

func (b *bulkRetryBundle) audits(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox_bulk_retries`).Scan(&n))
	return n
}

// TestPlanRetryQuarantinedFiltersAndWritesNothing: each filter, alone and
// together, selects the quarantined events it says, in the plan and in the
// retry alike; never a skipped, a published or a leased one; the plan's
// sample comes oldest quarantine first, and planning changes no row and
// writes no audit.
func TestPlanRetryQuarantinedFiltersAndWritesNothing(t *testing.T) {
	t.Parallel()
	b := setupBulkRetry(t)
	ctx := context.Background()
	before := b.rows(t)
	for _, tc := range []struct {
		name   string
		filter outboxops.RetryFilter
		want   []outbox.Event
	}{
		{"every quarantined event", outboxops.RetryFilter{}, []outbox.Event{b.old, b.route, b.invoice}},
		{"since", outboxops.RetryFilter{Since: time.Now().Add(-time.Hour)}, []outbox.Event{b.route, b.invoice}},
		{"error contains, ignoring case", outboxops.RetryFilter{ErrorContains: "unavailable"}, []outbox.Event{b.old, b.invoice}},
		{"aggregate type", outboxops.RetryFilter{AggregateType: "order"}, []outbox.Event{b.old, b.route}},
		{"all three", outboxops.RetryFilter{Since: time.Now().Add(-time.Hour), ErrorContains: "Unavailable", AggregateType: "invoice"}, []outbox.Event{b.invoice}},
		{"nothing", outboxops.RetryFilter{ErrorContains: "no such error"}, nil},
	} {
		p, err := outboxops.PlanRetryQuarantined(ctx, b.pool, tc.filter)
		require.NoError(t, err, tc.name)
		require.Equal(t, int64(len(tc.want)), p.Events, tc.name)
		got := []uuid.UUID{}
		for _, e := range p.Sample {
			got = append(got, e.ID)
			require.Equal(t, outboxops.StateQuarantined, e.State, tc.name)
		}
		require.Equal(t, ids(tc.want), got, "%s: the sample, oldest quarantine first", tc.name)
		// The plan and the batches write their filter twice (a plain
		// read, a locking update): they select the same events.
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		res, err := outboxops.RetryQuarantined(ctx, tx, outboxops.RetryQuarantinedOptions{RetryFilter: tc.filter, Actor: "ops"})
		require.NoError(t, err, tc.name)
		require.Equal(t, p.Events, res.Retried, "%s: the retry selects what the plan counted", tc.name)
		require.NoError(t, tx.Rollback(ctx))
		if len(tc.want) == 0 {
			require.Nil(t, p.First, tc.name)
			continue
		}
		require.Equal(t, *p.Sample[0].QuarantinedAt, *p.First, tc.name)
		require.Equal(t, *p.Sample[len(p.Sample)-1].QuarantinedAt, *p.Last, tc.name)
	}
	require.Equal(t, before, b.rows(t), "a plan changes no row")
	require.Zero(t, b.audits(t), "a plan writes no audit")
}

// TestRetryQuarantinedRetriesInAuditedBatches: the selected events are
// retried in batches (available now, attempts reset, quarantine and old
// owner cleared, last_error kept) and a relay claims them at once; every
// other row is untouched, an event quarantined after the retry began is not
// retried, and the audit row records actor, reason, filter and count.
func TestRetryQuarantinedRetriesInAuditedBatches(t *testing.T) {
	t.Parallel()
	b := setupBulkRetry(t)
	ctx := context.Background()
	late := testdb.Enqueue(t, b.pool, testdb.Event(t, "late", "One"))[0]
	before := b.rows(t)

	_, err := outboxops.RetryQuarantined(ctx, b.pool, outboxops.RetryQuarantinedOptions{Actor: "  "})
	require.ErrorContains(t, err, "an actor is mandatory")
	_, err = outboxops.RetryQuarantined(ctx, b.pool, outboxops.RetryQuarantinedOptions{Actor: "ops", BatchSize: -1})
	require.ErrorContains(t, err, "batch size -1 is out of range")

	var batches []outboxops.RetryBatch
	res, err := outboxops.RetryQuarantined(ctx, b.pool, outboxops.RetryQuarantinedOptions{
		RetryFilter: outboxops.RetryFilter{ErrorContains: "unavailable"},
		Actor:       "ops@host",
		Reason:      "Temporal outage INC-42 is over",
		BatchSize:   1,
		OnBatch: func(rb outboxops.RetryBatch) {
			batches = append(batches, rb)
			if rb.Number == 1 {
				// A matching event quarantined while the retry runs (after
				// its first batch committed) is not retried.
				_, err := b.pool.Exec(ctx, `UPDATE outbox_events SET quarantined_at = now(), attempt_count = 20, last_error = 'Unavailable again' WHERE event_id = $1`, late.ID)
				require.NoError(t, err)
			}
		},
	})
	require.NoError(t, err)
	require.Equal(t, int64(2), res.Retried)
	require.Equal(t, 2, res.Batches)
	require.Equal(t, []outboxops.RetryBatch{{Number: 1, Retried: 1, Total: 1}, {Number: 2, Retried: 1, Total: 2}}, batches)

	after := b.rows(t)
	for _, e := range []outbox.Event{b.route, b.skipped, b.published, b.publishedQ, b.leased, b.backing} {
		require.Equal(t, before[e.ID], after[e.ID], "event %s/%s is untouched", e.AggregateType, e.AggregateID)
	}
	for _, e := range []outbox.Event{b.old, b.invoice} {
		info, err := outboxops.List(ctx, b.pool, outboxops.ListOptions{AggregateType: e.AggregateType, AggregateID: e.AggregateID})
		require.NoError(t, err)
		require.Len(t, info, 1)
		require.Equal(t, outboxops.StatePending, info[0].State)
		require.Zero(t, info[0].Attempts, "a fresh attempt budget")
		require.Nil(t, info[0].QuarantinedAt)
		require.Empty(t, info[0].ClaimedBy)
		require.Contains(t, strings.ToLower(info[0].LastError), "unavailable", "the last error is kept for the record")
	}
	lateInfo, err := outboxops.List(ctx, b.pool, outboxops.ListOptions{AggregateType: "order", AggregateID: "late"})
	require.NoError(t, err)
	require.Equal(t, outboxops.StateQuarantined, lateInfo[0].State, "quarantined after the retry began: not retried")

	var (
		by, reason, contains, aggType string
		since, finished               *time.Time
		events                        int64
	)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT retried_by, reason, quarantined_since, error_contains, aggregate_type, events, finished_at
		FROM outbox_bulk_retries WHERE id = $1`, res.AuditID).Scan(&by, &reason, &since, &contains, &aggType, &events, &finished))
	require.Equal(t, "ops@host", by)
	require.Equal(t, "Temporal outage INC-42 is over", reason)
	require.Nil(t, since)
	require.Equal(t, "unavailable", contains)
	require.Empty(t, aggType)
	require.Equal(t, int64(2), events)
	require.NotNil(t, finished)
	require.Equal(t, 1, b.audits(t))

	rec := &outboxtest.Recorder{}
	outboxtest.RunRelay(t, b.pool, rec, outbox.RelayConfig{})
	require.ElementsMatch(t, ids([]outbox.Event{b.old, b.invoice}), ids(rec.Wait(t, 2, 10*time.Second)), "retried events are published at once")
}

// TestRetryQuarantinedJoinsTheCallersTransaction: run on the caller's
// transaction and rolled back with it, a bulk retry leaves neither a change
// nor an audit row.
func TestRetryQuarantinedJoinsTheCallersTransaction(t *testing.T) {
	t.Parallel()
	b := setupBulkRetry(t)
	ctx := context.Background()
	before := b.rows(t)
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	res, err := outboxops.RetryQuarantined(ctx, tx, outboxops.RetryQuarantinedOptions{Actor: "ops", BatchSize: 2})
	require.NoError(t, err)
	require.Equal(t, int64(3), res.Retried)
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, before, b.rows(t))
	require.Zero(t, b.audits(t))
}

// TestRetryQuarantinedCutShortIsRecorded: a bulk retry interrupted between
// batches has retried whole batches, its audit row counts exactly them and
// has no finished_at, and running it again retries the rest.
func TestRetryQuarantinedCutShortIsRecorded(t *testing.T) {
	t.Parallel()
	b := setupBulkRetry(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := outboxops.RetryQuarantined(ctx, b.pool, outboxops.RetryQuarantinedOptions{
		Actor: "ops", BatchSize: 1,
		OnBatch: func(outboxops.RetryBatch) { cancel() },
	})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "interrupted after 1 events")
	require.Equal(t, int64(1), res.Retried)
	var (
		events   int64
		finished *time.Time
	)
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT events, finished_at FROM outbox_bulk_retries WHERE id = $1`, res.AuditID).Scan(&events, &finished))
	require.Equal(t, int64(1), events, "the audit counts the committed batch")
	require.Nil(t, finished, "and shows the retry did not finish")

	p, err := outboxops.PlanRetryQuarantined(context.Background(), b.pool, outboxops.RetryFilter{})
	require.NoError(t, err)
	require.Equal(t, int64(2), p.Events)
	res, err = outboxops.RetryQuarantined(context.Background(), b.pool, outboxops.RetryQuarantinedOptions{Actor: "ops"})
	require.NoError(t, err)
	require.Equal(t, int64(2), res.Retried, "running it again retries the rest")
	require.Equal(t, 2, b.audits(t))
}
