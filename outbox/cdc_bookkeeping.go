package outbox

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/outflow/outflow/outbox/internal/relaysql"
)

// markLoop marks acknowledged events published in batches (MarkBatchSize,
// or MarkDelay after the first), then lets the lanes forget them and
// settles them. A failed mark is logged and the events settled anyway:
// Temporal has them, and once the stream's lease on the still unpublished
// rows expires the sweeper publishes them again, a duplicate the publisher
// absorbs.
func (s *stream) markLoop(bk context.Context) {
	var pending []*cdcEvent
	var timer *time.Timer
	var timerC <-chan time.Time
	flush := func() {
		if timer != nil {
			timer.Stop()
			timer, timerC = nil, nil
		}
		if len(pending) == 0 {
			return
		}
		s.mark(bk, pending)
		pending = pending[:0]
	}
	for {
		select {
		case e, ok := <-s.acks:
			if !ok {
				flush()
				return
			}
			pending = append(pending, e)
			if len(pending) >= s.c.cfg.MarkBatchSize {
				flush()
			} else if timer == nil {
				timer = time.NewTimer(s.c.cfg.MarkDelay)
				timerC = timer.C
			}
		case <-timerC:
			timer, timerC = nil, nil
			flush()
		}
	}
}

func (s *stream) mark(bk context.Context, events []*cdcEvent) {
	ids := make([]uuid.UUID, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	ctx, cancel := context.WithTimeout(bk, bookkeepingTimeout)
	marked, err := qCDCMark.All(ctx, s.c.pool, relaysql.EventsArgs{Owner: s.c.streamOwner, EventIDs: ids})
	cancel()
	switch {
	case err != nil:
		s.c.cfg.Logger.Error("outbox cdc: marking acknowledged events failed; the sweeper publishes them again when the stream's lease expires",
			"owner", s.c.cfg.Owner, "events", len(ids), "error", err)
	case len(marked) < len(ids):
		s.c.cfg.Logger.Warn("outbox cdc: some acknowledged events were not marked: an operator replayed them or another relay took them over",
			"owner", s.c.cfg.Owner, "acked", len(ids), "marked", len(marked))
		fallthrough
	default:
		s.c.metrics.published.Add(float64(len(marked)))
	}
	s.lanes.marked(ids, marked, time.Now())
	for _, e := range events {
		s.wm.settle(e.txn)
	}
}

// failLoop records the stream's failed publishes exactly as a polling relay
// records its own: it takes each event from the stream's lease as a claim of
// this relay's owner, the sweeper's (CDCTakeFailed counts the attempt) and hands it to the sweeper's failure
// recording (RelayFail: backoff, or quarantine when permanent or out of
// attempts), whose retries the sweeper then claims. The event is settled
// after that, recorded or not: an unrecorded one is unpublished and older
// than Grace soon, so the sweeper takes it anyway.
func (s *stream) failLoop(bk context.Context) {
	for sf := range s.fails {
		batch := []streamFailure{sf}
	more:
		for len(batch) < s.c.cfg.BatchSize {
			select {
			case f, ok := <-s.fails:
				if !ok {
					break more
				}
				batch = append(batch, f)
			default:
				break more
			}
		}
		s.recordFailures(bk, batch)
	}
}

func (s *stream) recordFailures(bk context.Context, batch []streamFailure) {
	defer func() {
		for _, f := range batch {
			s.wm.settle(f.e.txn)
		}
	}()
	ids := make([]uuid.UUID, len(batch))
	for i, f := range batch {
		ids[i] = f.e.ID
	}
	ctx, cancel := context.WithTimeout(bk, bookkeepingTimeout)
	defer cancel()
	taken, err := qCDCTakeFailed.All(ctx, s.c.pool, cdcTakeFailedArgs{
		Owner: s.c.cfg.Owner, StreamOwner: s.c.streamOwner, EventIDs: ids, LeaseMS: s.c.cfg.Lease.Milliseconds()})
	if err != nil {
		s.c.cfg.Logger.Error("outbox cdc: recording failed publishes failed; the sweeper retries them after the grace period",
			"owner", s.c.cfg.Owner, "events", len(ids), "error", err)
		return
	}
	attempts := make(map[uuid.UUID]int, len(taken))
	for _, t := range taken {
		attempts[t.EventID] = t.AttemptCount
	}
	var fs []failure
	for _, f := range batch {
		if a, ok := attempts[f.e.ID]; ok {
			fs = append(fs, failure{c: claimed{Event: f.e.Event, attempt: a}, err: f.err, delay: s.c.sweeper.backoff.Delay(a)})
		}
	}
	if len(fs) > 0 {
		s.c.sweeper.wakeAt(s.c.sweeper.flushFailures(bk, fs))
	}
}
