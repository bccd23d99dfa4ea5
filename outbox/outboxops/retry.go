package outboxops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/namedsql"
)

// Change is what an operator's command did to one event: the event before
// and after, read in the command's transaction.
type Change struct {
	Before EventInfo
	After  EventInfo
	// Log is the event as the log had it before the change, with its
	// partition and its order's hold, when it is the log's
	// (Before.Source is SourceLog); nil for an event of outbox_events.
	// Log.Redelivery says a skip gave up only a replay's redelivery.
	Log *LogEvent
}

// Retry makes a quarantined or backing-off event available now: its attempts
// are reset (a fresh OUTFLOW_MAX_ATTEMPTS budget), its quarantine is cleared,
// and relays are woken. Its last_error is kept. A pending event gets the same
// treatment (harmless); an event a relay is publishing right now, a published
// or skipped one is refused with an error wrapping [ErrEventState], an
// unknown ID with outbox.ErrEventNotFound.
//
// A retried event that still cannot be published is quarantined again; its
// aggregate's later events keep waiting until it is published or skipped.
//
// An event of the log source (outbox_log) is retried with the log's rules:
// an event a quarantined hold owns retries that hold, which is taken out of
// quarantine with its attempts back to 0 (RetryLogHold), and the
// hold's worker publishes its head again. A published log event is refused
// (replay it), and so is one its hold is still retrying on its own, each
// with an error wrapping ErrEventState.
func Retry(ctx context.Context, db DB, eventID uuid.UUID) (Change, error) {
	var c Change
	err := inTx(ctx, db, func(tx pgx.Tx) error {
		var err error
		c, err = retry(ctx, tx, eventID)
		return err
	})
	return c, err
}

// retry is [Retry] in tx: the event stays locked and the relays are woken
// when tx commits.
func retry(ctx context.Context, tx pgx.Tx, eventID uuid.UUID) (Change, error) {
	before, err := lockEvent(ctx, tx, eventID)
	if errors.Is(err, outbox.ErrEventNotFound) {
		return retryLog(ctx, tx, eventID, fmt.Errorf("outbox: retry: %w", err))
	}
	if err != nil {
		return Change{}, fmt.Errorf("outbox: retry: %w", err)
	}
	switch before.State {
	case StatePublished:
		return Change{}, fmt.Errorf("outbox: retry %s: %w: it was published at %s; to deliver it again use replay (outboxctl replay --from ... --to ... --aggregate %s)",
			eventID, ErrEventState, before.PublishedAt.Format(time.RFC3339), before.AggregateID)
	case StateSkipped:
		return Change{}, fmt.Errorf("outbox: retry %s: %w: it was skipped by %s at %s (%q); a skip is final, since later events of its aggregate may have been published since",
			eventID, ErrEventState, before.SkippedBy, before.SkippedAt.Format(time.RFC3339), before.SkipReason)
	case StateInFlight:
		return Change{}, fmt.Errorf("outbox: retry %s: %w: relay %s is publishing it right now (lease until %s); wait and look again",
			eventID, ErrEventState, before.ClaimedBy, before.ClaimUntil.Format(time.RFC3339))
	}
	if _, err := qOpsRetry.Exec(ctx, tx, eventIDArgs{EventID: eventID}); err != nil {
		return Change{}, fmt.Errorf("outbox: retry %s: %w", eventID, err)
	}
	return finishChange(ctx, tx, before)
}

// retryLog is retry of an event outbox_events does not have (notFound says
// so): the log's, whose quarantined hold it heads is retried.
func retryLog(ctx context.Context, tx pgx.Tx, eventID uuid.UUID, notFound error) (Change, error) {
	e, err := findLogEvent(ctx, tx, eventID, notFound)
	if err != nil {
		return Change{}, err
	}
	switch st := EventState(e.State()); st {
	case StateQuarantined:
	case StatePublished:
		return Change{}, fmt.Errorf("outbox: retry %s: %w: the log's relay delivered it; to deliver it again use replay (outboxctl replay --from ... --to ... --aggregate-type %s --aggregate %s)",
			eventID, ErrEventState, e.AggregateType, e.AggregateID)
	case StateHeld:
		return Change{}, fmt.Errorf("outbox: retry %s: %w: its order's log hold is not quarantined (attempts %d): the hold worker publishes it with backoff on its own",
			eventID, ErrEventState, e.Attempts)
	default:
		return Change{}, fmt.Errorf("outbox: retry %s: %w: it is %s in the log", eventID, ErrEventState, st)
	}
	if err := RetryLogHold(ctx, tx, e.AggregateType, e.AggregateID); err != nil {
		return Change{}, logStateError(err)
	}
	after, err := logEventAfter(ctx, tx, e)
	if err != nil {
		return Change{}, err
	}
	return Change{Before: logEventInfo(e), After: after, Log: &e}, nil
}

// finishChange wakes the relays at commit and reads the event after the
// change.
func finishChange(ctx context.Context, tx pgx.Tx, before EventInfo) (Change, error) {
	if _, err := qOpsNotify.Exec(ctx, tx, namedsql.NoArgs{}); err != nil {
		return Change{}, fmt.Errorf("outbox: notify relays: %w", err)
	}
	after, err := lockEvent(ctx, tx, before.ID)
	if err != nil {
		return Change{}, fmt.Errorf("outbox: reading event %s back: %w", before.ID, err)
	}
	return Change{Before: before, After: after}, nil
}

// RetryFilter selects the quarantined events [RetryQuarantined] retries and
// [PlanRetryQuarantined] counts. Every field is optional; the zero filter
// selects every quarantined event. Published and skipped events are never
// selected, nor an event under a live lease.
type RetryFilter struct {
	// Since selects events quarantined at or after it (e.g. when an outage
	// began). Optional: defaulted to any time.
	Since time.Time
	// ErrorContains selects events whose last_error contains this text,
	// ignoring case (e.g. "Unavailable"). Optional: defaulted to any error.
	ErrorContains string
	// AggregateType selects events of aggregates of this type (e.g.
	// "order"). Optional: defaulted to every type.
	AggregateType string
}

// since is Since as the statements take it: NULL for any time.
func (f RetryFilter) since() *time.Time {
	if f.Since.IsZero() {
		return nil
	}
	return &f.Since
}

// logFilter is f as it selects the log source's quarantined holds,
// quarantined at or before until (any time when zero).
func (f RetryFilter) logFilter(until time.Time) LogHoldFilter {
	return LogHoldFilter{Since: f.Since, Until: until, ErrorContains: f.ErrorContains, AggregateType: f.AggregateType}
}

// RetryPlanSample is the most events [RetryPlan.Sample] holds.
const RetryPlanSample = 10

// RetryPlan is what a bulk retry would do now, as [PlanRetryQuarantined]
// reports it.
type RetryPlan struct {
	// Events is the number of quarantined events the filter selects.
	Events int64
	// First and Last are the oldest and newest quarantined_at among them;
	// nil when there are none.
	First, Last *time.Time
	// Sample is the first of them, oldest quarantine first: at most
	// [RetryPlanSample].
	Sample []EventInfo
	// LogHolds are the log source's quarantined holds the filter selects
	// (outbox_log_holds), oldest quarantine first, each with the event it
	// is stuck on; [RetryQuarantined] retries them after the events.
	LogHolds []LogHold
}

// PlanRetryQuarantined counts the events [RetryQuarantined] would retry with
// filter f, and returns a sample of them. It changes nothing.
func PlanRetryQuarantined(ctx context.Context, db DB, f RetryFilter) (RetryPlan, error) {
	rows, err := qOpsRetryQuarantinedPlan.All(ctx, db, retryPlanArgs{
		QuarantinedSince: f.since(), ErrorContains: f.ErrorContains, AggregateType: f.AggregateType,
		SampleSize: RetryPlanSample,
	})
	if err != nil {
		return RetryPlan{}, fmt.Errorf("outbox: planning a bulk retry: %w", err)
	}
	var p RetryPlan
	for _, r := range rows {
		p.Events, p.First, p.Last = r.Matching, r.FirstQuarantinedAt, r.LastQuarantinedAt
		p.Sample = append(p.Sample, r.eventInfo())
	}
	if p.LogHolds, err = QuarantinedLogHolds(ctx, db, f.logFilter(time.Time{})); err != nil {
		return RetryPlan{}, fmt.Errorf("outbox: planning a bulk retry: %w", err)
	}
	return p, nil
}

// RetryBatchSizeDefault is the default of [RetryQuarantinedOptions.BatchSize].
const RetryBatchSizeDefault = 1000

// retryBatchSizeMax bounds [RetryQuarantinedOptions.BatchSize].
const retryBatchSizeMax = 100000

// RetryQuarantinedOptions configures [RetryQuarantined].
type RetryQuarantinedOptions struct {
	// RetryFilter selects the events. Optional: defaulted to every
	// quarantined event.
	RetryFilter
	// Actor is who asked for the retry, recorded in the audit row
	// (outbox_bulk_retries.retried_by). Mandatory.
	Actor string
	// Reason is why, recorded in the audit row. Optional.
	Reason string
	// BatchSize is the most events one batch (one short transaction)
	// retries, 1 to 100000. Optional: defaulted to [RetryBatchSizeDefault]
	// (1000).
	BatchSize int
	// OnBatch is called after each batch that retried events, e.g. to print
	// progress. Optional.
	OnBatch func(RetryBatch)
}

// RetryBatch is one batch of [RetryQuarantined].
type RetryBatch struct {
	// Number counts the batches, from 1.
	Number int
	// Retried is the number of events this batch retried.
	Retried int64
	// Total is the number of events retried so far.
	Total int64
}

// RetryResult is what [RetryQuarantined] did.
type RetryResult struct {
	// AuditID is the audit row (outbox_bulk_retries.id).
	AuditID int64
	// StartedAt is the audit row's started_at: events quarantined after it
	// were not retried.
	StartedAt time.Time
	// Retried is the number of events retried.
	Retried int64
	// Batches counts the batches that retried events.
	Batches int
	// LogHolds are the log source's quarantined holds it retried after the
	// events (counted in the audit row's log_holds).
	LogHolds []LogHold
}

// RetryQuarantined does what [Retry] does to every quarantined event the
// filter selects: each becomes available now with a fresh
// OUTFLOW_MAX_ATTEMPTS budget and its quarantine cleared (last_error is
// kept), and relays are woken after each batch. It is the repair after an
// outage of the sink quarantined healthy events: fix the cause, then retry
// them at once instead of one by one.
//
// Published, skipped and pending events are never touched, nor an event
// under a live lease. Only events quarantined at or before the retry's start
// are retried, so an event that fails again and is quarantined while the
// retry runs stays quarantined (it is the event's own fault) and the retry
// ends.
//
// The log source's quarantined holds the filter selects (quarantined by
// the retry's start) are retried after the events, like
// RetryLogHold, each in a transaction of its own.
//
// The retry is audited: before the first batch it writes a row of
// outbox_bulk_retries with Actor, Reason and the filter, and each batch adds
// its count to that row in the batch's transaction (the log's holds theirs
// to log_holds, once they are retried). Each batch is one short
// transaction of at most BatchSize events (FOR UPDATE SKIP LOCKED, so it
// never waits for an operator's command on one of them); a retry cut short
// has retried whole batches, its audit row says how many events, its
// finished_at stays NULL, and running it again retries the rest. Given a
// caller's pgx.Tx as db, each of these transactions is a savepoint of it:
// everything commits (and the relays are woken) when tx commits, OnBatch
// runs before that, and every selected event stays locked until then.
func RetryQuarantined(ctx context.Context, db DB, opts RetryQuarantinedOptions) (RetryResult, error) {
	opts.Actor, opts.Reason = strings.TrimSpace(opts.Actor), strings.TrimSpace(opts.Reason)
	opts.BatchSize = cmp.Or(opts.BatchSize, RetryBatchSizeDefault)
	switch {
	case opts.Actor == "":
		return RetryResult{}, errors.New("outbox: bulk retry: an actor is mandatory: who asked for the retry (recorded in outbox_bulk_retries.retried_by)")
	case opts.BatchSize < 1 || opts.BatchSize > retryBatchSizeMax:
		return RetryResult{}, fmt.Errorf("outbox: bulk retry: batch size %d is out of range; use 1 to %d (default %d)", opts.BatchSize, retryBatchSizeMax, RetryBatchSizeDefault)
	}
	var res RetryResult
	f := opts.RetryFilter
	err := inTx(ctx, db, func(tx pgx.Tx) error {
		begun, err := qOpsRetryQuarantinedBegin.One(ctx, tx, retryBeginArgs{
			QuarantinedSince: f.since(), ErrorContains: f.ErrorContains, AggregateType: f.AggregateType,
			RetriedBy: opts.Actor, Reason: opts.Reason,
		})
		res.AuditID, res.StartedAt = begun.ID, begun.StartedAt
		return err
	})
	if err != nil {
		return res, fmt.Errorf("outbox: bulk retry: writing its audit row: %w", err)
	}
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("outbox: bulk retry %d interrupted after %d events: %w", res.AuditID, res.Retried, err)
		}
		var retried int64
		err := inTx(ctx, db, func(tx pgx.Tx) error {
			var err error
			retried, err = qOpsRetryQuarantinedBatch.One(ctx, tx, retryBatchArgs{
				QuarantinedSince: f.since(), ErrorContains: f.ErrorContains, AggregateType: f.AggregateType,
				Until: res.StartedAt, BatchSize: opts.BatchSize, RetryID: res.AuditID,
			})
			if err != nil || retried == 0 {
				return err
			}
			_, err = qOpsNotify.Exec(ctx, tx, namedsql.NoArgs{})
			return err
		})
		if err != nil {
			return res, fmt.Errorf("outbox: bulk retry %d, batch %d (after %d events): %w", res.AuditID, n, res.Retried, err)
		}
		if retried == 0 {
			break
		}
		res.Retried += retried
		res.Batches++
		if opts.OnBatch != nil {
			opts.OnBatch(RetryBatch{Number: n, Retried: retried, Total: res.Retried})
		}
		if retried < int64(opts.BatchSize) {
			break
		}
	}
	// The log source's quarantined holds, after the events: each in a
	// transaction of its own that locks its partition's cursor row (the
	// log protocol's rule), the count then added to the audit row.
	holds, err := RetryQuarantinedLogHolds(ctx, db, f.logFilter(res.StartedAt))
	res.LogHolds = holds
	if len(holds) > 0 {
		aerr := inTx(ctx, db, func(tx pgx.Tx) error {
			_, err := qOpsRetryLogHolds.Exec(ctx, tx, retryLogHoldsArgs{RetryID: res.AuditID, LogHolds: int64(len(holds))})
			return err
		})
		err = errors.Join(err, aerr)
	}
	if err != nil {
		return res, fmt.Errorf("outbox: bulk retry %d, the log's holds (after %d events and %d holds): %w", res.AuditID, res.Retried, len(holds), err)
	}
	err = inTx(ctx, db, func(tx pgx.Tx) error {
		_, err := qOpsRetryQuarantinedFinish.Exec(ctx, tx, retryIDArgs{RetryID: res.AuditID})
		return err
	})
	if err != nil {
		return res, fmt.Errorf("outbox: bulk retry %d: recording its end (its %d events are retried): %w", res.AuditID, res.Retried, err)
	}
	return res, nil
}
