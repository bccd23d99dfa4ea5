package outbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
)

// A partition's hold worker: model/log.pml's Holds, H1 to H4. It runs beside
// the partition's reader, in the owner's process, and publishes the events
// of the orders under a hold, one hold at a time, each head's attempt
// counted before its publish. Each of its transactions starts by locking
// the partition's cursor row while this relay owns it (LogFence), which
// fences a stale owner and serialises the worker with the advance.

// holdWorker works p's holds until ctx ends.
func (r *logRelay) holdWorker(ctx context.Context, p *logPartition) {
	failures := 0
	for ctx.Err() == nil {
		worked := false
		if r.core.sink.closed() {
			var err error
			worked, err = r.holdStep(ctx, p)
			switch {
			case errors.Is(err, errLogLeaseLost):
				// The reader finds it lost too and stops this worker.
			case err != nil && ctx.Err() == nil:
				failures++
				delay := errorBackoff.Delay(failures)
				r.cfg.Logger.Error("outbox log relay: a hold's step failed; retrying", "owner", r.cfg.Owner, "partition", p.id, "retry_in", delay, "error", err)
				sleep(ctx, delay)
				continue
			case err == nil:
				failures = 0
			}
		}
		if worked {
			continue
		}
		wait := r.cfg.PollInterval
		if due := p.holdsDue.Swap(0); due != 0 {
			wait = min(wait, max(time.Until(time.Unix(0, due)), time.Millisecond))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-p.holdsWake:
		case <-t.C:
		}
		t.Stop()
	}
}

// holdStep is one step of the hold worker: H1 on the next hold due (its
// head's attempt counted, or the hold quarantined with its attempts used
// up, or released when it has caught up with the cursor: H4), then H2 and
// H3 for an attempt. It reports whether there was a hold to work on.
func (r *logRelay) holdStep(ctx context.Context, p *logPartition) (bool, error) {
	bk := context.WithoutCancel(ctx)
	dueIn, err := qLogHoldsDue.All(ctx, r.pool, logPartitionArgs{Partition: p.id})
	if err != nil || len(dueIn) == 0 {
		return false, err
	}
	if wait := time.Duration(dueIn[0] * float64(time.Second)); wait > 0 {
		p.holdsDue.Store(time.Now().Add(wait).UnixNano())
		return false, nil
	}
	// A publish starts only with PublishTimeout to spare in the lease: if
	// the lease is too short now, the reader renews it first (and wakes
	// this worker), rather than an attempt counted and given back in a loop.
	l := lease{deadline: time.Unix(0, p.leaseEnd.Load())}
	if _, ok := l.publishDeadline(time.Now(), r.cfg.PublishTimeout, r.cfg.Lease/10); !ok {
		p.renewWanted.Store(true)
		wakeChan(p.wake)
		return false, nil
	}
	var h logHoldRow
	publish, found, waiting := false, false, false
	tctx, cancel := context.WithTimeout(bk, bookkeepingTimeout)
	err = pgx.BeginFunc(tctx, r.pool, func(tx pgx.Tx) error {
		cur, err := qLogFence.All(tctx, tx, logFenceArgs{Partition: p.id, Owner: r.cfg.Owner, Live: true})
		if err != nil {
			return err
		}
		if len(cur) == 0 {
			return errLogLeaseLost
		}
		hs, err := qLogHoldNext.All(tctx, tx, logAfterArgs{Partition: p.id, Gate: cur[0].Gate, Pos: cur[0].Pos})
		if err != nil || len(hs) == 0 {
			return err
		}
		found, h = true, hs[0]
		key := logHoldKeyArgs{AggregateType: h.AggregateType, AggregateID: h.AggregateID, FromGate: h.FromGate, FromPos: h.FromPos}
		switch {
		case h.EventID == nil:
			// H4: nothing of the order is left between the hold and the
			// cursor, checked under the cursor's lock.
			_, err = qLogHoldRelease.One(tctx, tx, key)
			return err
		case h.Waits:
			// An earlier event of the order is unpublished in
			// outbox_events: no attempt, look again after a poll interval.
			_, err = qLogHoldWait.Exec(tctx, tx, logHoldWaitArgs{
				AggregateType: h.AggregateType, AggregateID: h.AggregateID, FromGate: h.FromGate, FromPos: h.FromPos,
				DelayMS: r.cfg.PollInterval.Milliseconds(), Error: errLogWaits,
			})
			return err
		case !p.mayPublish(aggregateKey{h.AggregateType, h.AggregateID}):
			// The reader's batch in flight may publish this order: wait
			// for its advance (it wakes this worker).
			waiting = true
			p.holdWaiting.Store(true)
			return nil
		case h.Attempts >= r.cfg.MaxAttempts && !h.Skipped: // a tombstone is never quarantined
			_, err = qLogHoldAttempt.Exec(tctx, tx, logHoldAttemptArgs{
				AggregateType: h.AggregateType, AggregateID: h.AggregateID, FromGate: h.FromGate, FromPos: h.FromPos,
				Quarantine: true,
				Error:      fmt.Sprintf("quarantined after %d attempts: each publish of this event failed, or its relay died or stalled before recording the outcome", h.Attempts),
			})
			return err
		}
		publish = true
		_, err = qLogHoldAttempt.Exec(tctx, tx, logHoldAttemptArgs{
			AggregateType: h.AggregateType, AggregateID: h.AggregateID, FromGate: h.FromGate, FromPos: h.FromPos,
		})
		return err
	})
	cancel()
	if err != nil {
		if errors.Is(err, errLogLeaseLost) {
			return false, err
		}
		return false, fmt.Errorf("outbox: hold of partition %d: %w", p.id, err)
	}
	if !found || waiting {
		return false, nil
	}
	attrs := []any{"owner", r.cfg.Owner, "partition", p.id, "aggregate_type", h.AggregateType, "aggregate_id", h.AggregateID}
	if !publish {
		switch {
		case h.Waits:
			// Said once, when the reader made the hold.
		case h.EventID == nil:
			r.cfg.Logger.Info("outbox log relay: a hold caught up with the cursor: released, its order flows again", attrs...)
		default:
			r.cfg.Logger.Error("outbox log relay: a held event used its attempts: quarantined; its order waits for an operator (retry or skip)",
				append(attrs, "event_id", *h.EventID, "attempts", h.Attempts)...)
		}
		return true, nil
	}
	return true, r.holdPublish(ctx, bk, p, h)
}

// holdPublish is H2 and H3: the head's publish under the partition's lease,
// then its outcome, fenced by the owner.
func (r *logRelay) holdPublish(ctx, bk context.Context, p *logPartition, h logHoldRow) error {
	row := logRow{Pos: *h.HeadPos, Gate: *h.HeadGate, eventRow: eventRow{
		EventID: *h.EventID, AggregateType: h.AggregateType, AggregateID: h.AggregateID,
		AggregateSequence: *h.AggregateSequence, EventType: *h.EventType, SchemaVersion: *h.SchemaVersion,
		Payload: h.Payload, OccurredAt: *h.OccurredAt, TraceContext: h.TraceContext,
	}}
	l := lease{deadline: time.Unix(0, p.leaseEnd.Load())}
	e := row.event()
	e.Replay = h.Replay   // delivered before: an operator's replay
	e.Skipped = h.Skipped // an operator's skip: its tombstone
	o := r.attemptLog(ctx, bk, l, e, h.Attempts+1)
	attempt := h.Attempts + 1
	a := logHoldOutcomeArgs{
		AggregateType: h.AggregateType, AggregateID: h.AggregateID, FromGate: h.FromGate, FromPos: h.FromPos,
		HeadGate: row.Gate, HeadPos: row.Pos, MaxAttempts: r.cfg.MaxAttempts,
	}
	if h.Skipped {
		// A tombstone is retried after its backoff however it fails, never
		// quarantined: the event is given up already (SkipPublisher).
		a.MaxAttempts = math.MaxInt32
	}
	switch {
	case o.skipped:
		a.Outcome, a.Error = "sink", "not attempted: the relay was stopping, its breaker open or its lease short; no attempt counted"
	case o.err == nil:
		r.core.sink.acked()
		r.core.metrics.published.Inc()
		a.Outcome = "acked"
	default:
		f := classify(o.err)
		r.core.metrics.publishErrors[f].Inc()
		a.Error = truncate(o.err.Error(), 1000)
		if f == faultEvent {
			a.Outcome, a.Permanent = "failed", errors.Is(o.err, ErrPermanent) && !h.Skipped
			a.DelayMS = r.core.backoff.Delay(attempt).Milliseconds()
		} else {
			if f == faultSink {
				r.core.sink.sinkFault(o.err)
			}
			a.Outcome = "sink"
			a.Error = truncate(fmt.Sprintf("%s fault, no attempt counted: %v", f, o.err), 1000)
		}
	}
	var quarantined, recorded bool
	tctx, cancel := context.WithTimeout(bk, bookkeepingTimeout)
	defer cancel()
	err := pgx.BeginFunc(tctx, r.pool, func(tx pgx.Tx) error {
		cur, err := qLogFence.All(tctx, tx, logFenceArgs{Partition: p.id, Owner: r.cfg.Owner})
		if err != nil || len(cur) == 0 {
			return err
		}
		q, err := qLogHoldOutcome.All(tctx, tx, a)
		if err != nil || len(q) == 0 {
			return err
		}
		quarantined, recorded = q[0], true
		return nil
	})
	if err != nil {
		return fmt.Errorf("outbox: record a hold's outcome (partition %d): %w", p.id, err)
	}
	attrs := []any{"owner", r.cfg.Owner, "partition", p.id, "event_id", row.EventID, "aggregate_type", row.AggregateType,
		"aggregate_id", row.AggregateID, "aggregate_sequence", row.AggregateSequence, "attempt", attempt}
	switch {
	case !recorded:
		r.cfg.Logger.Warn("outbox log relay: a hold's outcome was not recorded: the partition or the hold changed meanwhile", attrs...)
	case quarantined:
		r.cfg.Logger.Error("outbox log relay: held event quarantined; its order waits for an operator (retry or skip)", append(attrs, "error", a.Error)...)
	case a.Outcome == "failed":
		r.cfg.Logger.Warn("outbox log relay: held event failed; will retry", append(attrs, "retry_in", time.Duration(a.DelayMS)*time.Millisecond, "error", a.Error)...)
	}
	return nil
}
