package outboxops

import (
	"context"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/internal/relaysql"
	"github.com/outflow/outflow/outbox/namedsql"
)

// The log source's operator statements (log.sql), bound to their Go types.
var (
	qLogOpLock        = namedsql.Bind[aggregateArgs, logKey](queries, "LogOpLock")
	qLogOpRetry       = namedsql.Bind[aggregateArgs, int](queries, "LogOpRetry")
	qLogOpSkip        = namedsql.Bind[logOpSkipArgs, logOpSkipRow](queries, "LogOpSkip")
	qLogHolds         = namedsql.Bind[namedsql.NoArgs, HeldOrder](queries, "LogHolds")
	qLogOpReplayLock  = namedsql.Bind[aggregateArgs, logKey](queries, "LogOpReplayLock")
	qLogOpHeld        = namedsql.Bind[aggregateArgs, bool](queries, "LogOpHeld")
	qLogOpReplay      = namedsql.Bind[logOpReplayArgs, logKey](queries, "LogOpReplay")
	qLogOpPartitions  = namedsql.Bind[namedsql.NoArgs, logPartitionRow](queries, "LogOpPartitions")
	qLogOpQuarantined = namedsql.Bind[logHoldFilterArgs, LogHold](queries, "LogOpQuarantined")
	qLogOpEvents      = namedsql.Bind[logOpEventsArgs, LogEvent](queries, "LogOpEvents")
	qLogOpPending     = namedsql.Bind[logOpPendingArgs, logPendingRow](queries, "LogOpPending")

	// qLogGauges is the relay's own gauges statement (package outbox
	// checks it), read here for the status.
	qLogGauges = namedsql.Bind[namedsql.NoArgs, relaysql.LogGaugesRow](relaysql.Queries, "LogGauges")
)

// logStatements are log.sql's and log_retention.sql's, for the test that
// has the database check them.
var logStatements = slices.Concat([]namedsql.Info{
	qLogOpLock.Info(), qLogOpRetry.Info(), qLogOpSkip.Info(), qLogHolds.Info(), qLogOpReplayLock.Info(),
	qLogOpHeld.Info(), qLogOpReplay.Info(), qLogOpPartitions.Info(), qLogOpQuarantined.Info(),
	qLogOpEvents.Info(), qLogOpPending.Info(),
}, logRetentionStatements)

type aggregateArgs struct {
	AggregateType string `db:"aggregate_type"`
	AggregateID   string `db:"aggregate_id"`
}

// logKey is a key of the log, (gate, pos): an event's, or a cursor's.
type logKey struct {
	Gate int64 `db:"gate"`
	Pos  int64 `db:"pos"`
}

// beginner opens a transaction: a pool's, or a savepoint of a pgx.Tx.
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

type logOpReplayArgs struct {
	AggregateType string `db:"aggregate_type"`
	AggregateID   string `db:"aggregate_id"`
	Sequence      int64  `db:"sequence"`
	Gate          int64  `db:"gate"`
	Pos           int64  `db:"pos"`
}

// logOpSkipRow is a skip's head (nil: the hold had none) and whether it
// was a replay's redelivery of an event delivered before (no skip
// recorded).
type logOpSkipRow struct {
	EventID    *uuid.UUID `db:"event_id"`
	Redelivery bool       `db:"redelivery"`
}

type logOpSkipArgs struct {
	AggregateType string `db:"aggregate_type"`
	AggregateID   string `db:"aggregate_id"`
	Gate          int64  `db:"gate"`
	Pos           int64  `db:"pos"`
	SkippedBy     string `db:"skipped_by"`
	Reason        string `db:"reason"`
}
