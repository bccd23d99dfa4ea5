package outbox

import (
	"time"

	"github.com/google/uuid"

	"github.com/outflow/outflow/outbox/internal/relaysql"
	"github.com/outflow/outflow/outbox/namedsql"
)

// The log relay source's statements (log.sql), bound to their Go types.
var (
	qLogTake        = namedsql.Bind[logTakeArgs, int](queries, "LogTake")
	qLogCursor      = namedsql.Bind[logCursorArgs, logCursorRow](queries, "LogCursor")
	qLogHoldsView   = namedsql.Bind[logPartitionArgs, aggregateKey](queries, "LogHoldsView")
	qLogBatch       = namedsql.Bind[logBatchArgs, logRow](queries, "LogBatch")
	qLogTry         = namedsql.Bind[logTryArgs, int](queries, "LogTry")
	qLogAdvance     = namedsql.Bind[logAdvanceArgs, logAdvanceRow](queries, "LogAdvance")
	qLogRefused     = namedsql.Bind[logOwnedArgs, int64](queries, "LogRefused")
	qLogRelease     = namedsql.Bind[logOwnedArgs, namedsql.NoRows](queries, "LogRelease")
	qLogFence       = namedsql.Bind[logFenceArgs, logKey](queries, "LogFence")
	qLogHoldNext    = namedsql.Bind[logAfterArgs, logHoldRow](queries, "LogHoldNext")
	qLogHoldsDue    = namedsql.Bind[logPartitionArgs, float64](queries, "LogHoldsDue")
	qLogHoldAttempt = namedsql.Bind[logHoldAttemptArgs, namedsql.NoRows](queries, "LogHoldAttempt")
	qLogHoldRelease = namedsql.Bind[logHoldKeyArgs, int64](queries, "LogHoldRelease")
	qLogHoldWait    = namedsql.Bind[logHoldWaitArgs, namedsql.NoRows](queries, "LogHoldWait")
	qLogHoldOutcome = namedsql.Bind[logHoldOutcomeArgs, bool](queries, "LogHoldOutcome")
	qLogListen      = namedsql.Bind[namedsql.NoArgs, namedsql.NoRows](queries, "LogListen")
	qLogWaiting     = namedsql.Bind[logAfterArgs, bool](queries, "LogWaiting")
	qLogGauges      = namedsql.Bind[namedsql.NoArgs, relaysql.LogGaugesRow](queries, "LogGauges")
	qLogBeat        = namedsql.Bind[logBeatArgs, logRelayRow](queries, "LogBeat")
	qLogUnregister  = namedsql.Bind[logUnregisterArgs, namedsql.NoRows](queries, "LogUnregister")
)

// logStatements are the log source's statements, for the test that has
// the database check them.
var logStatements = []namedsql.Info{
	qLogTake.Info(), qLogCursor.Info(), qLogHoldsView.Info(), qLogBatch.Info(), qLogTry.Info(),
	qLogAdvance.Info(), qLogRefused.Info(), qLogRelease.Info(), qLogFence.Info(), qLogHoldNext.Info(),
	qLogHoldAttempt.Info(), qLogHoldRelease.Info(), qLogHoldOutcome.Info(),
	qLogListen.Info(), qLogWaiting.Info(), qLogGauges.Info(),
	qLogHoldsDue.Info(),
	qLogBeat.Info(), qLogUnregister.Info(), qLogHoldWait.Info(),
}

type logBeatArgs struct {
	Owner         string `db:"owner"`
	MaxPartitions int    `db:"max_partitions"`
	LeaseMS       int64  `db:"lease_ms"`
}

type logUnregisterArgs struct {
	Owner string `db:"owner"`
}

// logRelayRow is a live log relay as LogBeat sees it.
type logRelayRow struct {
	Owner         string `db:"owner"`
	MaxPartitions int    `db:"max_partitions"`
	Held          int    `db:"held"`
}

type logTakeArgs struct {
	Owner         string `db:"owner"`
	LeaseMS       int64  `db:"lease_ms"`
	MaxPartitions int    `db:"max_partitions"`
	Running       []int  `db:"running"`
}

type logPartitionArgs struct {
	Partition int `db:"partition"`
}

type logOwnedArgs struct {
	Partition int    `db:"partition"`
	Owner     string `db:"owner"`
}

type logCursorArgs struct {
	Partition int    `db:"partition"`
	Owner     string `db:"owner"`
	RenewMS   int64  `db:"renew_ms"`
}

type logTryArgs struct {
	Partition int    `db:"partition"`
	Owner     string `db:"owner"`
	LeaseMS   int64  `db:"lease_ms"`
	Epoch     int64  `db:"epoch"`
	Begin     bool   `db:"begin"`
}

// logKey is a key of the log, (gate, pos): an event's, or a cursor's.
type logKey struct {
	Gate int64 `db:"gate"`
	Pos  int64 `db:"pos"`
}

type logCursorRow struct {
	Gate  int64 `db:"gate"`
	Pos   int64 `db:"pos"`
	Epoch int64 `db:"epoch"`
	Tries int   `db:"tries"`
	Renew bool  `db:"renew"`
}

type aggregateKey struct {
	AggregateType string `db:"aggregate_type"`
	AggregateID   string `db:"aggregate_id"`
}

type logBatchArgs struct {
	Partition int   `db:"partition"`
	Gate      int64 `db:"gate"`
	Pos       int64 `db:"pos"`
	Window    int   `db:"window"`
}

// logRow is one event of the log with its key.
type logRow struct {
	eventRow
	Pos  int64 `db:"pos"`
	Gate int64 `db:"gate"`
	// Waits: an earlier event of its order is unpublished in
	// outbox_events (LogBatch), so it goes to a hold that waits for it.
	Waits bool `db:"waits"`
}

func (r logRow) key() logKey { return logKey{Gate: r.Gate, Pos: r.Pos} }

// logAdvanceArgs are an advance and the holds it inserts, one element of
// each array per held order.
type logAdvanceArgs struct {
	Partition      int      `db:"partition"`
	Owner          string   `db:"owner"`
	Epoch          int64    `db:"epoch"`
	Gate           int64    `db:"gate"`
	Pos            int64    `db:"pos"`
	AggregateTypes []string `db:"aggregate_types"`
	AggregateIDs   []string `db:"aggregate_ids"`
	FromGates      []int64  `db:"from_gates"`
	FromPos        []int64  `db:"from_pos"`
	Attempts       []int32  `db:"attempts"`
	DelaysMS       []int64  `db:"delays_ms"`
	Quarantined    []bool   `db:"quarantined"`
	Errors         []string `db:"errors"`
}

type logAdvanceRow struct {
	Advanced bool  `db:"advanced"`
	Holds    int64 `db:"holds"`
}

type logFenceArgs struct {
	Partition int    `db:"partition"`
	Owner     string `db:"owner"`
	Live      bool   `db:"live"`
}

// logAfterArgs are a partition and a key: what comes after it.
type logAfterArgs struct {
	Partition int   `db:"partition"`
	Gate      int64 `db:"gate"`
	Pos       int64 `db:"pos"`
}

// logHoldRow is a hold due now and its head (nil fields: no head).
type logHoldRow struct {
	AggregateType     string            `db:"aggregate_type"`
	AggregateID       string            `db:"aggregate_id"`
	FromGate          int64             `db:"from_gate"`
	FromPos           int64             `db:"from_pos"`
	Attempts          int               `db:"attempts"`
	Replay            bool              `db:"replay"`
	Skipped           bool              `db:"skipped"`
	HeadPos           *int64            `db:"head_pos"`
	HeadGate          *int64            `db:"head_gate"`
	EventID           *uuid.UUID        `db:"event_id"`
	AggregateSequence *int64            `db:"aggregate_sequence"`
	EventType         *string           `db:"event_type"`
	SchemaVersion     *int              `db:"schema_version"`
	Payload           []byte            `db:"payload"`
	OccurredAt        *time.Time        `db:"occurred_at"`
	TraceContext      map[string]string `db:"trace_context"`
	// Waits: an earlier event of the order is unpublished in
	// outbox_events; the head waits (LogHoldWait).
	Waits bool `db:"waits"`
}

// logHoldKeyArgs name a hold as it was read (its from, so a hold an
// operator changed meanwhile is not touched).
type logHoldKeyArgs struct {
	AggregateType string `db:"aggregate_type"`
	AggregateID   string `db:"aggregate_id"`
	FromGate      int64  `db:"from_gate"`
	FromPos       int64  `db:"from_pos"`
}

type logHoldWaitArgs struct {
	AggregateType string `db:"aggregate_type"`
	AggregateID   string `db:"aggregate_id"`
	FromGate      int64  `db:"from_gate"`
	FromPos       int64  `db:"from_pos"`
	DelayMS       int64  `db:"delay_ms"`
	Error         string `db:"error"`
}

type logHoldAttemptArgs struct {
	AggregateType string `db:"aggregate_type"`
	AggregateID   string `db:"aggregate_id"`
	FromGate      int64  `db:"from_gate"`
	FromPos       int64  `db:"from_pos"`
	Quarantine    bool   `db:"quarantine"`
	Error         string `db:"error"`
}

type logHoldOutcomeArgs struct {
	AggregateType string `db:"aggregate_type"`
	AggregateID   string `db:"aggregate_id"`
	FromGate      int64  `db:"from_gate"`
	FromPos       int64  `db:"from_pos"`
	Outcome       string `db:"outcome"`
	HeadGate      int64  `db:"head_gate"`
	HeadPos       int64  `db:"head_pos"`
	Permanent     bool   `db:"permanent"`
	MaxAttempts   int    `db:"max_attempts"`
	DelayMS       int64  `db:"delay_ms"`
	Error         string `db:"error"`
}
