package testsuite

import (
	"embed"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed invariants.sql oracle.sql inventory.sql useddb.sql
var sqlFiles embed.FS

// The suite's statements (invariants.sql for the invariant checker,
// inventory.sql for its checks on the inventory service's database,
// oracle.sql for the chaos soak's operator and oracle, useddb.sql for a
// used database's helpers), bound to their Go types when the package is
// initialised. The time-edge tests' own are in
// time_edges_test.go.
var (
	queries = withEvents(namedsql.MustLoadAll(sqlFiles))

	qEvents = namedsql.Bind[namedsql.NoArgs, eventRow](queries, "Events")

	qOrderFacts          = namedsql.Bind[namedsql.NoArgs, orderFacts](queries, "OrderFacts")
	qFeedFacts           = namedsql.Bind[namedsql.NoArgs, feedFacts](queries, "FeedFacts")
	qOrphanEvents        = namedsql.Bind[namedsql.NoArgs, int64](queries, "OrphanEvents")
	qEventIDs            = namedsql.Bind[namedsql.NoArgs, string](queries, "EventIDs")
	qSkippedEvents       = namedsql.Bind[namedsql.NoArgs, skippedEvent](queries, "SkippedEvents")
	qProgress            = namedsql.Bind[namedsql.NoArgs, progressRow](queries, "Progress")
	qOrderStatus         = namedsql.Bind[orderIDArgs, string](queries, "OrderStatus")
	qCounts              = namedsql.Bind[namedsql.NoArgs, countsRow](queries, "Counts")
	qSourceCounts        = namedsql.Bind[namedsql.NoArgs, sourceCounts](queries, "SourceCounts")
	qLogBacklogFacts     = namedsql.Bind[namedsql.NoArgs, logBacklogFacts](queries, "LogBacklogFacts")
	qEventTimes          = namedsql.Bind[namedsql.NoArgs, eventTime](queries, "EventTimes")
	qTerminateBackends   = namedsql.Bind[namedsql.NoArgs, int64](queries, "TerminateBackends")
	qPublishedOutOfOrder = namedsql.Bind[namedsql.NoArgs, int64](queries, "PublishedOutOfOrder")
	qSampleLanes         = namedsql.Bind[sampleLanesArgs, []string](queries, "SampleLanes")
	qWebhookFacts        = namedsql.Bind[namedsql.NoArgs, webhookFacts](queries, "WebhookFacts")

	qInventoryEvents              = namedsql.Bind[namedsql.NoArgs, inventoryEvent](queries, "InventoryEvents")
	qInventoryAnswersWithoutEvent = namedsql.Bind[namedsql.NoArgs, int64](queries, "InventoryAnswersWithoutEvent")
	qInventoryReservations        = namedsql.Bind[namedsql.NoArgs, inventoryReservation](queries, "InventoryReservations")
	qInventoryStock               = namedsql.Bind[namedsql.NoArgs, inventoryStock](queries, "InventoryStock")

	qReplayFlagged        = namedsql.Bind[replayFlaggedArgs, replayFlaggedRow](queries, "ReplayFlagged")
	qReplayProgress       = namedsql.Bind[eventIDsArgs, replayProgressRow](queries, "ReplayProgress")
	qLateCancelCandidate  = namedsql.Bind[namedsql.NoArgs, lateCancelCandidate](queries, "LateCancelCandidate")
	qUnsettledPoison      = namedsql.Bind[aggregateTypeArgs, int64](queries, "UnsettledPoison")
	qStillFlagged         = namedsql.Bind[namedsql.NoArgs, stillFlaggedRow](queries, "StillFlagged")
	qOracleEvents         = namedsql.Bind[namedsql.NoArgs, oracleEvent](queries, "OracleEvents")
	qErasures             = namedsql.Bind[namedsql.NoArgs, erasure](queries, "Erasures")
	qUnfinished           = namedsql.Bind[namedsql.NoArgs, unfinishedOrder](queries, "Unfinished")
	qUnpublishedEvents    = namedsql.Bind[namedsql.NoArgs, unpublishedEvent](queries, "UnpublishedEvents")
	qPoisonExists         = namedsql.Bind[aggregateArgs, bool](queries, "PoisonExists")
	qCustomerUnsettled    = namedsql.Bind[emailArgs, int64](queries, "CustomerUnsettled")
	qOrderMarks           = namedsql.Bind[eventIDsArgs, laterEvent](queries, "OrderMarks")
	qLogReplayHolds       = namedsql.Bind[orderIDsArgs, string](queries, "LogReplayHolds")
	qPoisonDeliverable    = namedsql.Bind[aggregateArgs, int64](queries, "PoisonDeliverable")
	qPoisonReplaysPending = namedsql.Bind[aggregateTypeArgs, int64](queries, "PoisonReplaysPending")
	qPoisonRedelivered    = namedsql.Bind[redeliveredArgs, int64](queries, "PoisonRedelivered")
	qPoisonReplayHeld     = namedsql.Bind[aggregateArgs, bool](queries, "PoisonReplayHeld")

	qCustomerKeys = namedsql.Bind[namedsql.NoArgs, int64](queries, "CustomerKeys")
)

// statements describes every bound statement, for the test that has the
// database check them.
var statements = []namedsql.Info{
	qEvents.Info(), qOrderFacts.Info(), qOrphanEvents.Info(), qEventIDs.Info(), qSkippedEvents.Info(), qProgress.Info(),
	qOrderStatus.Info(), qCounts.Info(), qSourceCounts.Info(), qLogBacklogFacts.Info(), qEventTimes.Info(), qTerminateBackends.Info(),
	qPublishedOutOfOrder.Info(), qSampleLanes.Info(),
	qReplayFlagged.Info(), qReplayProgress.Info(), qLateCancelCandidate.Info(), qUnsettledPoison.Info(),
	qStillFlagged.Info(), qOracleEvents.Info(), qErasures.Info(), qUnfinished.Info(),
	qUnpublishedEvents.Info(), qPoisonExists.Info(), qCustomerUnsettled.Info(), qOrderMarks.Info(), qLogReplayHolds.Info(),
	qPoisonDeliverable.Info(), qPoisonReplaysPending.Info(), qPoisonRedelivered.Info(), qPoisonReplayHeld.Info(),
	qFeedFacts.Info(), qWebhookFacts.Info(), qCustomerKeys.Info(),
}

// inventoryStatements are the statements of inventory.sql, which read the
// inventory service's tables.
var inventoryStatements = []namedsql.Info{
	qInventoryEvents.Info(), qInventoryAnswersWithoutEvent.Info(), qInventoryReservations.Info(), qInventoryStock.Info(),
}

type orderIDArgs struct {
	ID string `db:"id"`
}

type sampleLanesArgs struct {
	Lanes int `db:"lanes"`
}

type replayFlaggedArgs struct {
	Since     time.Time `db:"since"`
	From      time.Time `db:"from"`
	To        time.Time `db:"to"`
	Aggregate string    `db:"aggregate"` // "": every order
}

type eventIDsArgs struct {
	IDs []string `db:"ids"`
}

// eventsMarker is where a statement of invariants.sql reads the Events
// statement, invariants.sql's one definition of the events of both tables.
const eventsMarker = "/* Events */"

// withEvents puts the Events statement where a statement says
// eventsMarker, so each reads the same events (of outbox_events and of the
// log) without repeating their definition.
func withEvents(q namedsql.Queries) namedsql.Queries {
	events := "\n" + q.Get("Events") + "\n"
	for name, text := range q {
		if name != "Events" {
			q[name] = strings.ReplaceAll(text, eventsMarker, events)
		}
	}
	return q
}

// eventRow is one row of the Events statement.
type eventRow struct {
	EventID           uuid.UUID `db:"event_id"`
	AggregateType     string    `db:"aggregate_type"`
	AggregateID       string    `db:"aggregate_id"`
	AggregateSequence int64     `db:"aggregate_sequence"`
	EventType         string    `db:"event_type"`
	Published         bool      `db:"published"`
	Skipped           bool      `db:"skipped"`
	Quarantined       bool      `db:"quarantined"`
}

type orderIDsArgs struct {
	OrderIDs []string `db:"order_ids"`
}

type aggregateTypeArgs struct {
	AggregateType string `db:"aggregate_type"`
}

type aggregateArgs struct {
	AggregateType string `db:"aggregate_type"`
	AggregateID   string `db:"aggregate_id"`
}

type redeliveredArgs struct {
	AggregateType string    `db:"aggregate_type"`
	AggregateID   string    `db:"aggregate_id"`
	Since         time.Time `db:"since"`
}

type emailArgs struct {
	Email string `db:"email"`
}

// progressRow is what a drain waits for: unpublished events, unfinished
// orders.
type progressRow struct {
	Unpublished int64 `db:"unpublished"`
	Unfinished  int64 `db:"unfinished"`
}

type countsRow struct {
	Orders int64 `db:"orders"`
	Events int64 `db:"events"`
}

type sourceCounts struct {
	OutboxEvents int64 `db:"outbox_events"`
	OutboxLog    int64 `db:"outbox_log"`
}

type logBacklogFacts struct {
	LogEvents    int64 `db:"log_events"`
	OutboxEvents int64 `db:"outbox_events"`
	Holds        int64 `db:"holds"`
	LogUpdates   int64 `db:"log_updates"`
}

type eventTime struct {
	EventID  string    `db:"event_id"`
	Occurred time.Time `db:"occurred_at"`
}

// replayFlaggedRow is an event a replay command flagged.
type replayFlaggedRow struct {
	EventID   string    `db:"event_id"`
	OrderID   string    `db:"order_id"`
	Sequence  int64     `db:"sequence"`
	Requested time.Time `db:"requested"`
}

// replayProgressRow is where a watched replay stands.
type replayProgressRow struct {
	EventID   string     `db:"event_id"`
	Requested *time.Time `db:"requested"`
	Published *time.Time `db:"published"`
}

type lateCancelCandidate struct {
	OrderID  string    `db:"order_id"`
	Occurred time.Time `db:"occurred"`
}

// stillFlaggedRow is a replayed event still flagged after the drain.
type stillFlaggedRow struct {
	EventID   string    `db:"event_id"`
	Aggregate string    `db:"aggregate"`
	Sequence  int64     `db:"sequence"`
	Published bool      `db:"published"`
	Requested time.Time `db:"requested"`
}

// unfinishedOrder is an order a drain still waits for, with its events.
type unfinishedOrder struct {
	OrderID         string    `db:"order_id"`
	Status          string    `db:"status"`
	Customer        string    `db:"customer"`
	CancelRequested bool      `db:"cancel_requested"`
	Created         time.Time `db:"created"`
	Events          []string  `db:"events"`
}

// unpublishedEvent is an unpublished event, for the drain's diagnosis.
type unpublishedEvent struct {
	EventID     string `db:"event_id"`
	Aggregate   string `db:"aggregate"`
	Sequence    int64  `db:"sequence"`
	Type        string `db:"type"`
	Attempts    int    `db:"attempts"`
	Quarantined bool   `db:"quarantined"`
	LastError   string `db:"last_error"`
}
