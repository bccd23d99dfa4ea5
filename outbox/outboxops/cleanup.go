package outboxops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/namedsql"
)

// The tables [Cleanup] deletes from, as [CleanupBatch.Table] names them.
const (
	CleanupTableEvents = "outbox_events"
	CleanupTableInbox  = "processed_events"
)

// CleanupBatchSizeDefault is the default of [CleanupOptions.BatchSize].
const CleanupBatchSizeDefault = 1000

// CleanupBatchSizeMax is the most [CleanupOptions.BatchSize] may be.
const CleanupBatchSizeMax = 100000

// CleanupOptions configures [Cleanup].
type CleanupOptions struct {
	// Retention is how long published events are kept after their publish.
	// Mandatory, positive.
	Retention time.Duration
	// InboxRetention is how long processed_events rows are kept. It may not
	// be shorter than Retention: a replayed event's local effects are kept
	// single by its inbox rows. Optional: defaulted to Retention.
	InboxRetention time.Duration
	// BatchSize is the most rows one batch (one short transaction) deletes,
	// 1 to 100000. Optional: defaulted to [CleanupBatchSizeDefault] (1000).
	BatchSize int
	// OnBatch is called after each batch that deleted rows has committed,
	// e.g. to print progress or count metrics. Optional.
	OnBatch func(CleanupBatch)
	// Failpoints injects faults at cleanup.mid_batch (after a batch, before
	// the next). Optional: nil injects none (a binary passes
	// failpoints.Parse(os.Getenv(failpoints.EnvVar)), the library never reads the environment).
	Failpoints *failpoints.Set
}

// CleanupBatch is one committed batch of [Cleanup].
type CleanupBatch struct {
	// Table is CleanupTableEvents or CleanupTableInbox.
	Table string
	// Number counts the table's batches in this pass, from 1.
	Number int
	// Deleted is the number of rows this batch deleted.
	Deleted int64
	// Total is the number of rows of Table this pass has deleted so far.
	Total int64
}

// CleanupResult is what one [Cleanup] pass did.
type CleanupResult struct {
	// EventsCutoff: events published before it were deleted.
	EventsCutoff time.Time
	// InboxCutoff: inbox rows processed before it whose event is gone were
	// deleted.
	InboxCutoff time.Time
	// EventsDeleted and InboxDeleted count the deleted rows.
	EventsDeleted, InboxDeleted int64
	// Batches counts the batches that deleted rows.
	Batches int
	// Log is what [CleanupExclusive]'s pass of the log's retention did
	// ([RetainLog]); [Cleanup] leaves it zero.
	Log LogRetentionResult
}

// Cleanup deletes, in bounded batches, outbox events published longer than
// Retention ago, and processed_events rows older than InboxRetention whose
// event is no longer retained. It never deletes an unpublished event:
// pending, backing-off, quarantined, replayed and skipped events stay however
// old they are (a skipped event's row records the operator's decision).
//
// Each batch is one DELETE ... WHERE event_id IN (SELECT ... LIMIT n FOR
// UPDATE SKIP LOCKED), its own short transaction, so cleanup never holds
// many locks or a long transaction, skips rows a relay holds, and can run
// next to relays and other cleanups. A pass interrupted between batches
// (a crash at cleanup.mid_batch, a cancelled ctx) has deleted whole batches
// only; running it again finishes the job.
//
// Before deleting it records the cutoff as the cleanup horizon, which
// [Replay] refuses to reach behind.
func Cleanup(ctx context.Context, db DB, opts CleanupOptions) (CleanupResult, error) {
	if err := opts.setDefaults(); err != nil {
		return CleanupResult{}, err
	}
	if err := opts.validate(); err != nil {
		return CleanupResult{}, err
	}
	var res CleanupResult
	cutoffs, err := qOpsCleanupCutoffs.One(ctx, db, cleanupCutoffsArgs{
		EventsRetentionMS: opts.Retention.Milliseconds(),
		InboxRetentionMS:  opts.InboxRetention.Milliseconds(),
	})
	if err != nil {
		return res, fmt.Errorf("outbox: cleanup: %w", err)
	}
	res.EventsCutoff, res.InboxCutoff = cutoffs.EventsCutoff, cutoffs.InboxCutoff
	if _, err := qOpsRecordCleanupHorizon.Exec(ctx, db, recordCleanupHorizonArgs{DeletedBefore: res.EventsCutoff}); err != nil {
		return res, fmt.Errorf("outbox: cleanup: recording the horizon: %w", err)
	}
	tables := []struct {
		name   string
		stmt   namedsql.Stmt[cleanupBatchArgs, namedsql.NoRows]
		cutoff time.Time
		total  *int64
	}{
		{CleanupTableEvents, qOpsCleanupEvents, res.EventsCutoff, &res.EventsDeleted},
		{CleanupTableInbox, qOpsCleanupInbox, res.InboxCutoff, &res.InboxDeleted},
	}
	for _, t := range tables {
		for n := 1; ; n++ {
			if err := ctx.Err(); err != nil {
				return res, fmt.Errorf("outbox: cleanup interrupted after %d batches: %w", res.Batches, err)
			}
			tag, err := t.stmt.Exec(ctx, db, cleanupBatchArgs{Cutoff: t.cutoff, BatchSize: opts.BatchSize})
			if err != nil {
				return res, fmt.Errorf("outbox: cleanup %s batch %d: %w", t.name, n, err)
			}
			deleted := tag.RowsAffected()
			if deleted == 0 {
				break
			}
			*t.total += deleted
			res.Batches++
			if opts.OnBatch != nil {
				opts.OnBatch(CleanupBatch{Table: t.name, Number: n, Deleted: deleted, Total: *t.total})
			}
			// One batch committed, the next not started.
			if err := opts.Failpoints.Inject(ctx, failpoints.CleanupMidBatch); err != nil {
				return res, fmt.Errorf("outbox: cleanup after %d batches: %w", res.Batches, err)
			}
			if deleted < int64(opts.BatchSize) {
				break
			}
		}
	}
	return res, nil
}

func (o *CleanupOptions) setDefaults() error {
	o.InboxRetention = cmp.Or(o.InboxRetention, o.Retention)
	o.BatchSize = cmp.Or(o.BatchSize, CleanupBatchSizeDefault)
	return nil
}

func (o *CleanupOptions) validate() error {
	switch {
	case o.Retention <= 0:
		return fmt.Errorf("outbox: cleanup: retention %s must be positive, e.g. 168h for 7 days", o.Retention)
	case o.InboxRetention < o.Retention:
		return fmt.Errorf("outbox: cleanup: inbox retention %s is shorter than the event retention %s: an event that can still be replayed would lose its inbox rows and apply its local effects twice; keep the inbox at least as long (e.g. --inbox-retention %s)",
			o.InboxRetention, o.Retention, o.Retention)
	case o.BatchSize < 1 || o.BatchSize > CleanupBatchSizeMax:
		return fmt.Errorf("outbox: cleanup: batch size %d is out of range; use 1 to %d (default %d)", o.BatchSize, CleanupBatchSizeMax, CleanupBatchSizeDefault)
	}
	return nil
}

// cleanupLockKey is the PostgreSQL advisory lock [CleanupExclusive] takes:
// "outflowC" read as a big-endian integer, unlikely to collide.
const cleanupLockKey int64 = 0x6f7574666c6f7743

// CleanupExclusive is the retention of every source in one call: one
// [Cleanup] pass, then one pass of the log's retention ([RetainLog]: its
// ranges made ahead of its sequence, old ones dropped), unless another
// process's CleanupExclusive holds the cleanup lock (a session-level
// advisory lock on a connection of pool, released when the pass ends or the
// process dies). ran reports whether the pass ran. A relay process calls it
// on a schedule whatever source the database records: the source may change
// while it runs, and the log's enqueues fail without ranges ahead.
func CleanupExclusive(ctx context.Context, pool *pgxpool.Pool, opts CleanupOptions) (res CleanupResult, ran bool, err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return res, false, fmt.Errorf("outbox: cleanup: %w", err)
	}
	defer conn.Release()
	if ran, err = qOpsCleanupTryLock.One(ctx, conn, lockKeyArgs{LockKey: cleanupLockKey}); err != nil {
		return res, false, fmt.Errorf("outbox: cleanup: taking the cleanup lock: %w", err)
	}
	if !ran {
		return res, false, nil
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		unlocked, uerr := qOpsCleanupUnlock.One(uctx, conn, lockKeyArgs{LockKey: cleanupLockKey})
		if uerr != nil || !unlocked {
			// Closing the session releases the lock; the pool discards the
			// closed connection.
			_ = conn.Conn().Close(uctx)
			err = errors.Join(err, uerr)
		}
	}()
	if res, err = Cleanup(ctx, pool, opts); err != nil {
		return res, true, err
	}
	res.Log, err = RetainLog(ctx, pool, LogRetentionOptions{Retention: opts.Retention})
	return res, true, err
}
