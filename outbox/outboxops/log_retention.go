package outboxops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/namedsql"
)

// logRangesAheadDefault is the default of [LogRetentionOptions.Ahead].
const logRangesAheadDefault = 2

// LogRetentionOptions configures [RetainLog].
type LogRetentionOptions struct {
	// Retention is how long after a range of the log was sealed (the
	// sequence passed its last position) it is kept (OUTFLOW_RETENTION).
	// Optional: 0 drops nothing; the ranges ahead are still made.
	Retention time.Duration
	// Ahead is how many whole ranges (outbox_log_range_width() positions
	// each) are kept made beyond the one outbox_log_pos is in, 1 to 100.
	// Optional: defaulted to 2.
	Ahead int
}

// LogRetentionResult is what one [RetainLog] pass did.
type LogRetentionResult struct {
	// Made counts the ranges made ahead, Sealed those the sequence passed.
	Made, Sealed int
	// Retired counts the ranges that passed the retention rule in this
	// pass; Dropped names the partitions dropped (retired in this pass or
	// left retiring by an interrupted one).
	Retired int
	Dropped []string
	// Busy reports that another process was running a pass: this one did
	// nothing.
	Busy bool
}

// RetainLog keeps the log source's outbox_log partitioned ahead of its
// sequence and drops the partitions retention no longer needs: one pass of
// model/log.pml's T1-T4 (model/README.md, "The log source").
//
//   - T1 makes ranges until opts.Ahead whole ranges lie beyond the
//     sequence, so an enqueue always finds its partition (there is no
//     DEFAULT partition: an enqueue past the last range fails).
//   - T2 seals the ranges the sequence has passed, recording a snapshot's
//     xmax taken after it saw the sequence there.
//   - T3 marks retiring every range that is sealed with every writer that
//     took a position in it ended (its xmax at or below the horizon), sealed
//     longer than opts.Retention ago, behind every partition's cursor in key
//     order (gate, pos), and owned by no hold; from then on no replay can
//     make a hold in it.
//   - T4 detaches each retiring range's partition with DETACH PARTITION ...
//     CONCURRENTLY (FINALIZE when an earlier pass was interrupted in it) and
//     drops it.
//
// Every step is idempotent and the state lives in outbox_log_ranges, so a
// pass interrupted anywhere (a crash between the detach and the drop, in
// the middle of the detach) is finished by the next. It needs a pool, not a
// transaction: the detach cannot run in a transaction block. One pass runs
// at a time across processes, on one connection holding a session-level
// advisory lock ("outflowT"); a pass that finds it taken does nothing and
// reports Busy.
func RetainLog(ctx context.Context, pool *pgxpool.Pool, opts LogRetentionOptions) (LogRetentionResult, error) {
	var res LogRetentionResult
	opts.Ahead = cmp.Or(opts.Ahead, logRangesAheadDefault)
	if opts.Ahead < 1 || opts.Ahead > 100 {
		return res, fmt.Errorf("outbox: log retention: %d ranges ahead is out of range; use 1 to 100 (default %d)", opts.Ahead, logRangesAheadDefault)
	}
	if opts.Retention < 0 {
		return res, fmt.Errorf("outbox: log retention: retention %s is negative; use 0 to keep every range", opts.Retention)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return res, fmt.Errorf("outbox: log retention: %w", err)
	}
	defer conn.Release()
	locked, err := qLogRetentionTryLock.Value(ctx, conn, namedsql.NoArgs{})
	if err != nil {
		return res, fmt.Errorf("outbox: log retention: taking its lock: %w", err)
	}
	if !locked {
		res.Busy = true
		return res, nil
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if unlocked, uerr := qLogRetentionUnlock.Value(uctx, conn, namedsql.NoArgs{}); uerr != nil || !unlocked {
			// Closing the session releases the lock; the pool discards
			// the closed connection.
			_ = conn.Conn().Close(uctx)
		}
	}()
	return res, retainLog(ctx, conn, opts, &res)
}

// retainLog is RetainLog's pass on conn, which holds the retention lock.
func retainLog(ctx context.Context, conn *pgxpool.Conn, opts LogRetentionOptions, res *LogRetentionResult) error {
	made, err := qLogExtend.Value(ctx, conn, logExtendArgs{Ahead: opts.Ahead})
	if err != nil {
		return fmt.Errorf("outbox: log retention: making ranges ahead: %w", err)
	}
	res.Made = made
	passed, err := qLogPassed.Value(ctx, conn, namedsql.NoArgs{})
	if err != nil {
		return fmt.Errorf("outbox: log retention: %w", err)
	}
	// A statement of its own after LogPassed: see log_retention.sql.
	sealed, err := qLogSeal.All(ctx, conn, logSealArgs{Passed: passed})
	if err != nil {
		return fmt.Errorf("outbox: log retention: sealing: %w", err)
	}
	res.Sealed = len(sealed)
	if opts.Retention > 0 {
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := qLogRetireLock.Exec(ctx, tx, namedsql.NoArgs{}); err != nil {
				return err
			}
			retired, err := qLogRetire.All(ctx, tx, logRetireArgs{RetentionMS: opts.Retention.Milliseconds()})
			res.Retired = len(retired)
			return err
		})
		if err != nil {
			return fmt.Errorf("outbox: log retention: applying the rule: %w", err)
		}
	}
	// Retiring ranges are dropped whatever opts.Retention says now: an
	// earlier pass found them no longer needed.
	retiring, err := qLogRetiring.All(ctx, conn, namedsql.NoArgs{})
	if err != nil {
		return fmt.Errorf("outbox: log retention: %w", err)
	}
	for _, r := range retiring {
		if err := dropLogRange(ctx, conn, r); err != nil {
			return fmt.Errorf("outbox: log retention: dropping %s: %w", r.Name, err)
		}
		res.Dropped = append(res.Dropped, r.Name)
	}
	return nil
}

// dropLogRange detaches a retiring range's partition and drops it. The
// detach is the one statement of the package not sent through a bound
// statement: LogRetiring spells it (format() with %I), and it is sent as
// text because DETACH ... CONCURRENTLY cannot run in a function or a
// transaction block.
func dropLogRange(ctx context.Context, conn *pgxpool.Conn, r logRetiringRow) error {
	switch {
	case r.Pending:
		// An earlier detach was interrupted after its first transaction.
		if _, err := conn.Exec(ctx, r.Finalize); err != nil {
			return err
		}
	case r.Attached:
		if _, err := conn.Exec(ctx, r.Detach); err != nil {
			return err
		}
	}
	dropped, err := qLogRangeDrop.Value(ctx, conn, logRangeArgs{Lo: r.Lo})
	if err == nil && !dropped {
		err = errors.New("the range is no longer retiring")
	}
	return err
}

// LogRanges are the log's partitions as outboxctl status shows them.
type LogRanges struct {
	// Kept counts the ranges not dropped; Ahead those made wholly beyond
	// the sequence (0: the next enqueue past the current range fails).
	Kept  int64 `json:"kept"`
	Ahead int64 `json:"ahead"`
	// OldestKept is when the oldest kept range was made; nil: none.
	OldestKept *time.Time `json:"oldest_kept,omitempty"`
	// Horizon is the newest seal of a range dropped or retiring (a pass
	// drops it): the log's events before it may be gone, and a replay of
	// one is refused. nil: nothing dropped or retiring yet.
	Horizon *time.Time `json:"horizon,omitempty"`
}

// LogRangesOf reads the log's ranges.
func LogRangesOf(ctx context.Context, db outbox.LookupDB) (LogRanges, error) {
	r, err := qLogRanges.One(ctx, db, namedsql.NoArgs{})
	if err != nil {
		return LogRanges{}, fmt.Errorf("outbox: the log's ranges: %w", err)
	}
	return LogRanges(r), nil
}

// The retention's statements (log_retention.sql).
var (
	qLogExtend     = namedsql.Bind[logExtendArgs, int](queries, "LogExtend")
	qLogPassed     = namedsql.Bind[namedsql.NoArgs, int64](queries, "LogPassed")
	qLogSeal       = namedsql.Bind[logSealArgs, int64](queries, "LogSeal")
	qLogRetireLock = namedsql.Bind[namedsql.NoArgs, namedsql.NoRows](queries, "LogRetireLock")
	qLogRetire     = namedsql.Bind[logRetireArgs, int64](queries, "LogRetire")
	qLogRetiring   = namedsql.Bind[namedsql.NoArgs, logRetiringRow](queries, "LogRetiring")
	qLogRangeDrop  = namedsql.Bind[logRangeArgs, bool](queries, "LogRangeDrop")
	qLogRanges     = namedsql.Bind[namedsql.NoArgs, logRangesRow](queries, "LogRanges")

	qLogRetentionTryLock = namedsql.Bind[namedsql.NoArgs, bool](queries, "LogRetentionTryLock")
	qLogRetentionUnlock  = namedsql.Bind[namedsql.NoArgs, bool](queries, "LogRetentionUnlock")
)

// logRetentionStatements are the retention's statements, for the test that
// has the database check them.
var logRetentionStatements = []namedsql.Info{
	qLogExtend.Info(), qLogPassed.Info(), qLogSeal.Info(), qLogRetireLock.Info(), qLogRetire.Info(),
	qLogRetiring.Info(), qLogRangeDrop.Info(), qLogRanges.Info(), qLogRetentionTryLock.Info(), qLogRetentionUnlock.Info(),
}

type logExtendArgs struct {
	Ahead int `db:"ahead"`
}

type logSealArgs struct {
	Passed int64 `db:"passed"`
}

type logRetireArgs struct {
	RetentionMS int64 `db:"retention_ms"`
}

type logRangeArgs struct {
	Lo int64 `db:"lo"`
}

type logRetiringRow struct {
	Lo       int64  `db:"lo"`
	Name     string `db:"name"`
	Attached bool   `db:"attached"`
	Pending  bool   `db:"pending"`
	Detach   string `db:"detach"`
	Finalize string `db:"finalize"`
}

type logRangesRow struct {
	Kept       int64      `db:"kept"`
	Ahead      int64      `db:"ahead"`
	OldestKept *time.Time `db:"oldest_kept"`
	Horizon    *time.Time `db:"horizon"`
}
