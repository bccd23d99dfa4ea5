package outboxops

import (
	"embed"
	"time"

	"github.com/google/uuid"

	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed *.sql
var sqlFiles embed.FS

// The package's statements (operations.sql; log.sql and log_retention.sql
// for the log source), bound to their Go types when the
// package is initialised.
var (
	queries = namedsql.MustLoadAll(sqlFiles)

	qOpsStatus                 = namedsql.Bind[namedsql.NoArgs, statusRow](queries, "OpsStatus")
	qOpsLeases                 = namedsql.Bind[namedsql.NoArgs, leaseRow](queries, "OpsLeases")
	qOpsList                   = namedsql.Bind[listArgs, eventInfoRow](queries, "OpsList")
	qOpsListHeld               = namedsql.Bind[listArgs, eventInfoRow](queries, "OpsListHeld")
	qOpsSinkBreakers           = namedsql.Bind[namedsql.NoArgs, SinkBreaker](queries, "OpsSinkBreakers")
	qOpsLockEvent              = namedsql.Bind[eventIDArgs, eventInfoRow](queries, "OpsLockEvent")
	qOpsRetry                  = namedsql.Bind[eventIDArgs, namedsql.NoRows](queries, "OpsRetry")
	qOpsRetryQuarantinedPlan   = namedsql.Bind[retryPlanArgs, retryPlanRow](queries, "OpsRetryQuarantinedPlan")
	qOpsRetryQuarantinedBegin  = namedsql.Bind[retryBeginArgs, retryBeginRow](queries, "OpsRetryQuarantinedBegin")
	qOpsRetryQuarantinedBatch  = namedsql.Bind[retryBatchArgs, int64](queries, "OpsRetryQuarantinedBatch")
	qOpsRetryQuarantinedFinish = namedsql.Bind[retryIDArgs, namedsql.NoRows](queries, "OpsRetryQuarantinedFinish")
	qOpsRetryLogHolds          = namedsql.Bind[retryLogHoldsArgs, namedsql.NoRows](queries, "OpsRetryQuarantinedLogHolds")
	qOpsSkip                   = namedsql.Bind[skipArgs, namedsql.NoRows](queries, "OpsSkip")
	qOpsNotify                 = namedsql.Bind[namedsql.NoArgs, namedsql.NoRows](queries, "OpsNotify")
	qOpsCleanupHorizon         = namedsql.Bind[namedsql.NoArgs, *time.Time](queries, "OpsCleanupHorizon")
	qOpsReplayCount            = namedsql.Bind[replayWindowArgs, replayCountRow](queries, "OpsReplayCount")
	qOpsReplay                 = namedsql.Bind[replayWindowArgs, replayedLane](queries, "OpsReplay")
	qOpsReplayLogOrders        = namedsql.Bind[replayWindowArgs, logOrder](queries, "OpsReplayLogOrders")
	qOpsReplayLockLanes        = namedsql.Bind[replayLanesArgs, namedsql.NoRows](queries, "OpsReplayLockLanes")
	qOpsReplayFence            = namedsql.Bind[replayFenceArgs, namedsql.NoRows](queries, "OpsReplayFence")
	qOpsReplayHorizon          = namedsql.Bind[namedsql.NoArgs, replayHorizonRow](queries, "OpsReplayHorizon")
	qOpsRecordReplayHorizon    = namedsql.Bind[recordReplayHorizonArgs, namedsql.NoRows](queries, "OpsRecordReplayHorizon")
	qOpsCleanupCutoffs         = namedsql.Bind[cleanupCutoffsArgs, cleanupCutoffsRow](queries, "OpsCleanupCutoffs")
	qOpsRecordCleanupHorizon   = namedsql.Bind[recordCleanupHorizonArgs, namedsql.NoRows](queries, "OpsRecordCleanupHorizon")
	qOpsCleanupEvents          = namedsql.Bind[cleanupBatchArgs, namedsql.NoRows](queries, "OpsCleanupEvents")
	qOpsCleanupInbox           = namedsql.Bind[cleanupBatchArgs, namedsql.NoRows](queries, "OpsCleanupInbox")
	qOpsCleanupTryLock         = namedsql.Bind[lockKeyArgs, bool](queries, "OpsCleanupTryLock")
	qOpsCleanupUnlock          = namedsql.Bind[lockKeyArgs, bool](queries, "OpsCleanupUnlock")
	qOpsEventRow               = namedsql.Bind[eventIDArgs, string](queries, "OpsEventRow")
	qOpsSource                 = namedsql.Bind[namedsql.NoArgs, SourceState](queries, "OpsSource")
	qOpsSetSource              = namedsql.Bind[setSourceArgs, setSourceRow](queries, "OpsSetSource")
)

// statements describes every bound statement, for the test that has the
// database check them.
var statements = append([]namedsql.Info{
	qOpsStatus.Info(),
	qOpsLeases.Info(),
	qOpsList.Info(),
	qOpsListHeld.Info(),
	qOpsSinkBreakers.Info(),
	qOpsLockEvent.Info(),
	qOpsRetry.Info(),
	qOpsRetryQuarantinedPlan.Info(),
	qOpsRetryQuarantinedBegin.Info(),
	qOpsRetryQuarantinedBatch.Info(),
	qOpsRetryQuarantinedFinish.Info(), qOpsRetryLogHolds.Info(),
	qOpsSkip.Info(),
	qOpsNotify.Info(),
	qOpsCleanupHorizon.Info(),
	qOpsReplayCount.Info(),
	qOpsReplay.Info(),
	qOpsReplayLogOrders.Info(),
	qOpsReplayLockLanes.Info(),
	qOpsReplayFence.Info(),
	qOpsReplayHorizon.Info(),
	qOpsRecordReplayHorizon.Info(),
	qOpsCleanupCutoffs.Info(),
	qOpsRecordCleanupHorizon.Info(),
	qOpsCleanupEvents.Info(),
	qOpsCleanupInbox.Info(),
	qOpsCleanupTryLock.Info(),
	qOpsCleanupUnlock.Info(),
	qOpsEventRow.Info(),
	qOpsSource.Info(),
	qOpsSetSource.Info(),
}, logStatements...)

type statusRow struct {
	CheckedAt               time.Time  `db:"checked_at"`
	Pending                 int64      `db:"pending"`
	OldestPendingAgeSeconds float64    `db:"oldest_pending_age_seconds"`
	Quarantined             int64      `db:"quarantined"`
	BackingOff              int64      `db:"backing_off"`
	Replaying               int64      `db:"replaying"`
	Skipped                 int64      `db:"skipped"`
	PublishedLast1m         int64      `db:"published_last_1m"`
	PublishedLast5m         int64      `db:"published_last_5m"`
	PublishedLast15m        int64      `db:"published_last_15m"`
	CleanupHorizon          *time.Time `db:"cleanup_horizon"`
}

type leaseRow struct {
	ClaimedBy      *string   `db:"claimed_by"`
	Events         int64     `db:"events"`
	EarliestExpiry time.Time `db:"earliest_expiry"`
}

// listArgs select OpsList's events; Filter is "all", "pending", "held",
// "quarantined" or "skipped".
type listArgs struct {
	Filter        string `db:"filter"`
	AggregateID   string `db:"aggregate_id"`
	AggregateType string `db:"aggregate_type"`
	MaxEvents     int    `db:"max_events"`
	NewestFirst   bool   `db:"newest_first"`
	EventType     string `db:"event_type"`
	ErrorContains string `db:"error_contains"`
	// OccurredBefore is nil for any time.
	OccurredBefore *time.Time `db:"occurred_before"`
	// After* are the keyset page's start, used when AfterSet.
	AfterSet           bool      `db:"after_set"`
	AfterOccurredAt    time.Time `db:"after_occurred_at"`
	AfterAggregateType string    `db:"after_aggregate_type"`
	AfterAggregateID   string    `db:"after_aggregate_id"`
	AfterSequence      int64     `db:"after_sequence"`
}

// eventInfoRow is a row of OpsList or OpsLockEvent: the event's columns, the
// database's clock and whether a predecessor blocks it (see [EventInfo]).
type eventInfoRow struct {
	EventID           uuid.UUID  `db:"event_id"`
	AggregateType     string     `db:"aggregate_type"`
	AggregateID       string     `db:"aggregate_id"`
	AggregateSequence int64      `db:"aggregate_sequence"`
	EventType         string     `db:"event_type"`
	SchemaVersion     int        `db:"schema_version"`
	OccurredAt        time.Time  `db:"occurred_at"`
	AvailableAt       time.Time  `db:"available_at"`
	ClaimedBy         *string    `db:"claimed_by"`
	ClaimUntil        *time.Time `db:"claim_until"`
	PublishedAt       *time.Time `db:"published_at"`
	AttemptCount      int        `db:"attempt_count"`
	LastError         *string    `db:"last_error"`
	QuarantinedAt     *time.Time `db:"quarantined_at"`
	SkippedAt         *time.Time `db:"skipped_at"`
	SkippedBy         *string    `db:"skipped_by"`
	SkipReason        *string    `db:"skip_reason"`
	ReplayRequestedAt *time.Time `db:"replay_requested_at"`
	DBNow             time.Time  `db:"db_now"`
	Blocked           bool       `db:"blocked"`
}

type eventIDArgs struct {
	EventID uuid.UUID `db:"event_id"`
}

// The bulk retry's arguments carry its filter (see [RetryFilter]) field by
// field, since pgx does not flatten an embedded struct of arguments: a nil
// QuarantinedSince and empty strings select everything.

type retryPlanArgs struct {
	QuarantinedSince *time.Time `db:"quarantined_since"`
	ErrorContains    string     `db:"error_contains"`
	AggregateType    string     `db:"aggregate_type"`
	SampleSize       int        `db:"sample_size"`
}

// retryPlanRow is one sampled event of OpsRetryQuarantinedPlan, with the
// figures over every match.
type retryPlanRow struct {
	eventInfoRow
	Matching           int64      `db:"matching"`
	FirstQuarantinedAt *time.Time `db:"first_quarantined_at"`
	LastQuarantinedAt  *time.Time `db:"last_quarantined_at"`
}

type retryBeginArgs struct {
	QuarantinedSince *time.Time `db:"quarantined_since"`
	ErrorContains    string     `db:"error_contains"`
	AggregateType    string     `db:"aggregate_type"`
	RetriedBy        string     `db:"retried_by"`
	Reason           string     `db:"reason"`
}

type retryBeginRow struct {
	ID        int64     `db:"id"`
	StartedAt time.Time `db:"started_at"`
}

// retryBatchArgs are one batch of the bulk retry RetryID: at most BatchSize
// events of the filter quarantined no later than Until.
type retryBatchArgs struct {
	QuarantinedSince *time.Time `db:"quarantined_since"`
	ErrorContains    string     `db:"error_contains"`
	AggregateType    string     `db:"aggregate_type"`
	Until            time.Time  `db:"until"`
	BatchSize        int        `db:"batch_size"`
	RetryID          int64      `db:"retry_id"`
}

type retryLogHoldsArgs struct {
	RetryID  int64 `db:"retry_id"`
	LogHolds int64 `db:"log_holds"`
}

type retryIDArgs struct {
	RetryID int64 `db:"retry_id"`
}

type skipArgs struct {
	EventID    uuid.UUID `db:"event_id"`
	SkippedBy  string    `db:"skipped_by"`
	SkipReason string    `db:"skip_reason"`
}

// replayWindowArgs are a replay's window [From, To); empty strings select
// every aggregate type or aggregate.
type replayWindowArgs struct {
	From          time.Time `db:"from"`
	To            time.Time `db:"to"`
	AggregateType string    `db:"aggregate_type"`
	AggregateID   string    `db:"aggregate_id"`
}

type replayCountRow struct {
	Events          int64      `db:"events"`
	FirstOccurredAt *time.Time `db:"first_occurred_at"`
	LastOccurredAt  *time.Time `db:"last_occurred_at"`
}

// replayLanesArgs are the replayed aggregates, one element of each array per
// aggregate.
type replayLanesArgs struct {
	AggregateTypes []string `db:"aggregate_types"`
	AggregateIDs   []string `db:"aggregate_ids"`
}

// replayFenceArgs are the replayed aggregates with their first replayed
// sequence, one element of each array per aggregate.
type replayFenceArgs struct {
	AggregateTypes []string `db:"aggregate_types"`
	AggregateIDs   []string `db:"aggregate_ids"`
	FirstSequences []int64  `db:"first_sequences"`
}

type replayHorizonRow struct {
	HorizonMS          int64     `db:"horizon_ms"`
	Reason             string    `db:"reason"`
	RecordedAt         time.Time `db:"recorded_at"`
	EarliestOccurredAt time.Time `db:"earliest_occurred_at"`
}

type recordReplayHorizonArgs struct {
	HorizonMS int64  `db:"horizon_ms"`
	Reason    string `db:"reason"`
}

type cleanupCutoffsArgs struct {
	EventsRetentionMS int64 `db:"events_retention_ms"`
	InboxRetentionMS  int64 `db:"inbox_retention_ms"`
}

type cleanupCutoffsRow struct {
	EventsCutoff time.Time `db:"events_cutoff"`
	InboxCutoff  time.Time `db:"inbox_cutoff"`
}

type recordCleanupHorizonArgs struct {
	DeletedBefore time.Time `db:"deleted_before"`
}

// cleanupBatchArgs are one cleanup batch: at most BatchSize rows older than
// Cutoff.
type cleanupBatchArgs struct {
	Cutoff    time.Time `db:"cutoff"`
	BatchSize int       `db:"batch_size"`
}

type lockKeyArgs struct {
	LockKey int64 `db:"lock_key"`
}
