package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/failpoints"
)

// A partition's reader: model/log.pml's Reader, R2 to R4 (R1, the take, is
// LogRelay.take).

// logView is what one read (R2) saw: the cursor with its epoch and tries,
// the orders under a hold, and the batch.
type logView struct {
	cursor logCursorRow
	held   map[aggregateKey]bool
	rows   []logRow
	lease  lease // from the read's renewal; only a batch that is not empty has one
	window int
	// waiting: committed events after the cursor wait above the horizon.
	waiting bool
	// failedAhead: the partition's failures its last advance did not
	// record (see logPartition.failedAhead).
	failedAhead map[uuid.UUID]logFailure
}

// isolating reports whether the read isolates its one event: a batch of
// one already died at this position after a full one did.
func (v *logView) isolating() bool { return v.cursor.Tries >= 2 }

// logFailure is an order of the batch that goes to a hold: its failed (or
// isolated) event, at batch index i.
type logFailure struct {
	i           int
	row         logRow
	err         error
	quarantined bool
	attempts    int
	delay       time.Duration
	at          time.Time // when it failed: its delay runs from then
	// waits: not attempted; an earlier event of its order is unpublished
	// in outbox_events (logRow.Waits), and the hold waits for it.
	waits bool
}

// errLogWaits is a hold's last error while its head waits for an earlier
// event of its order in outbox_events.
const errLogWaits = "waiting for an earlier event of its order in outbox_events (a database switching between outbox_events and the log): " +
	"published once that one is (outboxctl list shows it; a quarantined one waits for an operator: retry or skip it)"

// logNext is what a partition's reader does after a cycle.
type logNext int

const (
	logIdle    logNext = iota // wait for a NOTIFY or the safety poll
	logAgain                  // read again at once: the window was full, or the advance refused
	logHorizon                // read again soon: events wait above the horizon
)

// cycle reads one batch of p (R2), publishes it (R3) and advances (R4). It
// reports what the reader does next, and errLogLeaseLost when p is no
// longer this relay's.
func (r *logRelay) cycle(ctx context.Context, p *logPartition) (logNext, error) {
	// The bookkeeping outlives a shutdown signal: what was published is
	// advanced over.
	bk := context.WithoutCancel(ctx)
	rctx, cancel := context.WithTimeout(bk, bookkeepingTimeout)
	v, retry, err := r.read(rctx, p)
	cancel()
	if err != nil {
		return logIdle, err
	}
	if retry {
		return logAgain, nil
	}
	next := logIdle
	if v.waiting {
		next = logHorizon
	}
	if len(v.rows) == 0 {
		return next, nil
	}
	if err := r.dieAt(ctx, p, failpoints.LogAfterRead); err != nil {
		return logIdle, err
	}
	var done []bool
	var failed []logFailure
	if v.isolating() {
		done, failed = r.isolate(v)
	} else {
		done, failed = r.publishBatch(ctx, bk, v)
	}
	if err := r.dieAt(ctx, p, failpoints.LogBeforeAdvance); err != nil {
		return logIdle, err
	}
	actx, cancel := context.WithTimeout(bk, bookkeepingTimeout)
	defer cancel()
	refused, err := r.advance(actx, p, v, done, failed)
	if err != nil {
		return logIdle, err
	}
	if refused || len(v.rows) == v.window {
		next = logAgain
	}
	return next, nil
}

// errLogDied is a failpoint's error in the reader: the partition's reader
// dies there as its process would, writing nothing more.
var errLogDied = errors.New("outbox: the partition's reader died at a failpoint")

// dieAt runs the failpoint name; its error makes the reader die (its batch
// left in flight for the hold worker, its lease to expire).
func (r *logRelay) dieAt(ctx context.Context, p *logPartition, name string) error {
	if err := r.cfg.Failpoints.Inject(ctx, name); err != nil {
		return fmt.Errorf("%w: %w", errLogDied, err)
	}
	return nil
}

// read is R2: the cursor (its epoch and tries read first), the holds, the
// batch under the horizon, then, when the batch is not empty or the lease
// runs short, LogTry: tries + 1 for a batch begun and the lease renewed,
// fenced by the epoch read first, which makes the statements one step (see
// log.sql). A read that finds nothing writes nothing. The window is
// BatchSize at a fresh position and 1 once a batch died there. retry: the
// epoch moved under the read, read again.
func (r *logRelay) read(ctx context.Context, p *logPartition) (v logView, retry bool, err error) {
	v = logView{held: map[aggregateKey]bool{}}
	// From before the cursor is read until the advance: the hold worker
	// publishes only for the orders this view holds (mayPublish).
	p.startBatch()
	started := false
	defer func() {
		if !started {
			p.endBatch()
		}
	}()
	conn, err := r.pool.Acquire(ctx)
	if err != nil {
		return v, false, fmt.Errorf("outbox: read partition %d: %w", p.id, err)
	}
	defer conn.Release()
	var cursors []logCursorRow
	var held []aggregateKey
	b := &pgx.Batch{}
	qLogCursor.Queue(b, logCursorArgs{Partition: p.id, Owner: r.cfg.Owner, RenewMS: (r.cfg.Lease / 2).Milliseconds()}).Query(func(rows pgx.Rows) error {
		cursors, err = qLogCursor.Collect(rows)
		return err
	})
	qLogHoldsView.Queue(b, logPartitionArgs{Partition: p.id}).Query(func(rows pgx.Rows) error {
		held, err = qLogHoldsView.Collect(rows)
		return err
	})
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return v, false, fmt.Errorf("outbox: read partition %d: %w", p.id, err)
	}
	if len(cursors) == 0 {
		return v, false, errLogLeaseLost
	}
	v.cursor = cursors[0]
	v.failedAhead = p.failedAhead
	for _, h := range held {
		v.held[h] = true
	}
	p.setView(v.held)
	v.window = r.cfg.BatchSize
	if v.cursor.Tries > 0 {
		v.window = 1
	}
	b = &pgx.Batch{}
	qLogBatch.Queue(b, logBatchArgs{Partition: p.id, Gate: v.cursor.Gate, Pos: v.cursor.Pos, Window: v.window}).Query(func(rows pgx.Rows) error {
		v.rows, err = qLogBatch.Collect(rows)
		return err
	})
	var waiting []bool
	qLogWaiting.Queue(b, logAfterArgs{Partition: p.id, Gate: v.cursor.Gate, Pos: v.cursor.Pos}).Query(func(rows pgx.Rows) error {
		waiting, err = qLogWaiting.Collect(rows)
		return err
	})
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return v, false, fmt.Errorf("outbox: read partition %d: %w", p.id, err)
	}
	v.waiting = len(waiting) > 0 && waiting[0]
	if len(v.rows) == 0 && !v.cursor.Renew && !p.renewWanted.Load() {
		return v, false, nil
	}
	// The local deadline is measured from before the renewal is sent, so it
	// ends no later than the lease_until the database computes.
	now := time.Now()
	tried, err := qLogTry.All(ctx, conn, logTryArgs{
		Partition: p.id, Owner: r.cfg.Owner, LeaseMS: r.cfg.Lease.Milliseconds(), Epoch: v.cursor.Epoch,
		Begin: len(v.rows) > 0 && !v.isolating(),
	})
	if err != nil {
		return v, false, fmt.Errorf("outbox: read partition %d: %w", p.id, err)
	}
	if len(tried) == 0 {
		v.rows = nil
		return v, true, nil
	}
	v.lease = newLease(now, r.cfg.Lease)
	p.leaseEnd.Store(v.lease.deadline.UnixNano())
	if p.renewWanted.Swap(false) {
		wakeChan(p.holdsWake)
	}
	started = len(v.rows) > 0 // until the advance
	return v, false, nil
}

// isolate is the read that isolates its event (R2 with tries at 2): it is
// not published; it fails into a quarantined hold, with its attempts used
// up, unless its order is under a hold already (then it is the hold's).
func (r *logRelay) isolate(v logView) ([]bool, []logFailure) {
	row := v.rows[0]
	done := []bool{true}
	if v.held[aggregateKey{row.AggregateType, row.AggregateID}] {
		return done, nil
	}
	err := errors.New("isolated: two batches read at its position never finished (their relays died or stalled); this event was the first after the cursor, which may be innocent (a crash, an OOM kill or a deploy at that moment): retry it unless it kills its publisher")
	r.cfg.Logger.Error("outbox log relay: isolated an event after batches died at its position; its order waits for an operator (retry or skip)",
		"owner", r.cfg.Owner, "event_id", row.EventID, "aggregate_type", row.AggregateType, "aggregate_id", row.AggregateID,
		"aggregate_sequence", row.AggregateSequence)
	return done, []logFailure{{i: 0, row: row, err: err, quarantined: true, attempts: r.cfg.MaxAttempts}}
}

// publishBatch is R3: the batch's orders are published up to MaxInFlight at
// once, each order's events in key order, one at a time. An event of an
// order under a hold in the view, or of an order whose event failed earlier
// in this batch, is done without a publish (its hold owns it); an event
// that waits for an earlier event of its order in outbox_events is done
// without a publish too, its order to a hold that waits; an event's
// own error fails its order; a sink fault, a lease too short to start a
// publish, or a shutdown stops every order there (what is not done is read
// again). An event that failed in an earlier batch whose advance did not
// record it (v.failedAhead) fails again without a publish: its attempt was
// spent. It returns which events are done and the failed orders.
func (r *logRelay) publishBatch(ctx, bk context.Context, v logView) ([]bool, []logFailure) {
	type lane struct {
		key aggregateKey
		idx []int
	}
	var lanes []*lane
	byKey := map[aggregateKey]*lane{}
	for i, row := range v.rows {
		k := aggregateKey{row.AggregateType, row.AggregateID}
		l := byKey[k]
		if l == nil {
			l = &lane{key: k}
			byKey[k] = l
			lanes = append(lanes, l)
		}
		l.idx = append(l.idx, i)
	}
	done := make([]bool, len(v.rows))
	var (
		stop     atomic.Bool
		mu       sync.Mutex
		failures []logFailure
	)
	work := make(chan *lane, len(lanes))
	for _, l := range lanes {
		work <- l
	}
	close(work)
	var wg sync.WaitGroup
	for range min(r.cfg.MaxInFlight, len(lanes)) {
		wg.Go(func() {
			for l := range work {
				failedHere := false
				for _, i := range l.idx {
					if v.held[l.key] || failedHere {
						done[i] = true
						continue
					}
					if f, ok := v.failedAhead[v.rows[i].EventID]; ok {
						failedHere, done[i] = true, true
						f.i, f.row = i, v.rows[i]
						f.delay, f.at = max(0, f.delay-time.Since(f.at)), time.Now()
						mu.Lock()
						failures = append(failures, f)
						mu.Unlock()
						continue
					}
					if stop.Load() {
						break
					}
					if v.rows[i].Waits {
						// The order's lane goes on in outbox_events: a
						// hold waits there until that event is published.
						failedHere, done[i] = true, true
						mu.Lock()
						failures = append(failures, logFailure{
							i: i, row: v.rows[i], err: errors.New(errLogWaits), waits: true, delay: r.cfg.PollInterval,
						})
						mu.Unlock()
						continue
					}
					o := r.attemptLog(ctx, bk, v.lease, v.rows[i].event(), 1)
					if o.skipped {
						stop.Store(true)
						break
					}
					if o.err == nil {
						r.core.sink.acked()
						r.core.metrics.handoff.Observe(o.acked.Sub(v.rows[i].OccurredAt).Seconds())
						r.core.metrics.published.Inc()
						done[i] = true
						continue
					}
					f := classify(o.err)
					r.core.metrics.publishErrors[f].Inc()
					if f != faultEvent {
						if f == faultSink {
							r.core.sink.sinkFault(o.err)
						}
						stop.Store(true)
						break
					}
					failedHere, done[i] = true, true
					permanent := errors.Is(o.err, ErrPermanent)
					mu.Lock()
					failures = append(failures, logFailure{
						i: i, row: v.rows[i], err: o.err, attempts: 1,
						quarantined: permanent || r.cfg.MaxAttempts <= 1,
						delay:       r.core.backoff.Delay(1), at: time.Now(),
					})
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return done, failures
}

// attemptLog publishes one event, or returns it unattempted (skipped): the
// relay is shutting down, the breaker is open, or too little of the lease
// is left for a whole publish, as the polling relay's attempt.
func (r *logRelay) attemptLog(ctx, bk context.Context, l lease, e Event, attempt int) outcome {
	c := claimed{Event: e}
	if ctx.Err() != nil || !r.core.sink.closed() || r.core.pace.acquire(ctx) != nil {
		return outcome{c: c, skipped: true}
	}
	call := &publishCall{}
	deadline, ok := l.publishDeadline(time.Now(), r.cfg.PublishTimeout, r.cfg.Lease/10)
	if !ok {
		r.core.pace.done(faultEvent, false, call)
		return outcome{c: c, skipped: true}
	}
	w := r.core.sink.watch(deadline)
	pctx, cancel := context.WithDeadline(withCall(bk, call), deadline)
	err := publishAcked(pctx, &r.cfg.RelayConfig, attempt, r.pub, c.Event, nil, "")
	err = w.judge(err, e.ID, pctx.Err() != nil, call)
	cancel()
	r.core.pace.done(classify(err), err == nil, call)
	return outcome{c: c, err: err, acked: time.Now()}
}

// advance is R4: the cursor moves to the last key of the longest prefix of
// the batch whose events are all done, tries back to 0, and the prefix's
// failed orders become holds, in one statement fenced by the owner and the
// read's epoch. It reports refused when the epoch had moved (the batch is
// read again: what was published is published again, at least once), and
// errLogLeaseLost when the partition is someone else's. The failures it
// does not record (beyond the prefix, or all of them when refused) are
// kept for the next read (logPartition.failedAhead).
func (r *logRelay) advance(ctx context.Context, p *logPartition, v logView, done []bool, failed []logFailure) (refused bool, err error) {
	defer p.endBatch()
	prefix := 0
	for prefix < len(done) && done[prefix] {
		prefix++
	}
	to := logKey{Gate: v.cursor.Gate, Pos: v.cursor.Pos}
	if prefix > 0 {
		to = v.rows[prefix-1].key()
	}
	a := logAdvanceArgs{Partition: p.id, Owner: r.cfg.Owner, Epoch: v.cursor.Epoch, Gate: to.Gate, Pos: to.Pos}
	var holds []logFailure
	ahead := map[uuid.UUID]logFailure{}
	for _, f := range failed {
		if !f.waits { // not attempted: the next read looks again
			ahead[f.row.EventID] = f
		}
		if f.i >= prefix {
			continue // beyond the prefix: read again, not a hold
		}
		holds = append(holds, f)
		a.AggregateTypes = append(a.AggregateTypes, f.row.AggregateType)
		a.AggregateIDs = append(a.AggregateIDs, f.row.AggregateID)
		a.FromGates = append(a.FromGates, f.row.Gate)
		a.FromPos = append(a.FromPos, f.row.Pos)
		a.Attempts = append(a.Attempts, int32(f.attempts))
		a.DelaysMS = append(a.DelaysMS, f.delay.Milliseconds())
		a.Quarantined = append(a.Quarantined, f.quarantined)
		a.Errors = append(a.Errors, truncate(f.err.Error(), 1000))
	}
	res, err := qLogAdvance.One(ctx, r.pool, a)
	if err != nil {
		return false, fmt.Errorf("outbox: advance partition %d: %w", p.id, err)
	}
	p.failedAhead = ahead
	if res.Advanced {
		for _, f := range holds {
			delete(ahead, f.row.EventID) // recorded in its hold
			attrs := []any{"owner", r.cfg.Owner, "partition", p.id, "event_id", f.row.EventID, "event_type", f.row.EventType,
				"aggregate_type", f.row.AggregateType, "aggregate_id", f.row.AggregateID,
				"aggregate_sequence", f.row.AggregateSequence, "error", f.err}
			switch {
			case f.waits:
				r.cfg.Logger.Warn("outbox log relay: an earlier event of its order is unpublished in outbox_events; its order is held until that one is published", attrs...)
			case f.quarantined:
				r.cfg.Logger.Error("outbox log relay: event quarantined; its order is held for an operator (retry or skip), the partition's other orders flow on", attrs...)
			default:
				r.cfg.Logger.Warn("outbox log relay: publish failed; its order is held and retried by the hold worker", append(attrs, "retry_in", f.delay)...)
			}
		}
		if len(holds) > 0 {
			wakeChan(p.holdsWake)
		}
		return false, nil
	}
	epochs, err := qLogRefused.All(ctx, r.pool, logOwnedArgs{Partition: p.id, Owner: r.cfg.Owner})
	if err != nil {
		return false, fmt.Errorf("outbox: advance partition %d refused: %w", p.id, err)
	}
	if len(epochs) == 0 {
		return false, errLogLeaseLost
	}
	r.cfg.Logger.Debug("outbox log relay: advance refused: the holds changed since the read; reading the batch again",
		"owner", r.cfg.Owner, "partition", p.id, "epoch", epochs[0], "read_epoch", v.cursor.Epoch)
	return true, nil
}
