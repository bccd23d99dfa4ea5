package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/outflow/outflow/outbox/failpoints"
)

// The relay's pipeline: Run claims the next events while earlier publishes
// are still in flight, so the publisher is never idle between claims. A
// claim takes at most the room left (claimed events not yet settled stay
// within the pipeline's capacity, BatchSize or twice MaxInFlight, whichever
// is more: what one claim of the relay before the pipeline held, so a
// queued event starts long before its lease runs short), MaxInFlight
// workers publish, and one bookkeeper marks the acknowledgements, records
// the failures and releases what was never attempted in batches across
// claims: at MarkBatchSize acknowledgements, MarkDelay after the first
// unwritten outcome (BacklogMarkDelay while the claimer has a backlog), or
// at once when every claimed event has its outcome
// (nothing else is coming to share the statement). Per event nothing changes: claimed with a lease, published within
// it, marked fenced by the owner; an aggregate's next event is claimable
// only once its predecessor is marked, which wakes the claimer. What is new
// is one owner holding the events of several claims at once, whose outcomes
// are written late and fenced by that owner alone: so a claim never takes an
// event this relay still holds (RelayClaim's @held), even one whose lease
// expired while its outcome waited. Otherwise the old outcome would settle,
// release or mark the new claim (model/pipeline.pml: a claim orphaned, one
// event published twice, a replay marked published unsent).

// job is one claimed event and its claim's lease.
type job struct {
	c claimed
	l lease
}

// attempt publishes j's event, or returns it unattempted (skipped): the
// relay is shutting down, its sink's breaker is open, or too little of the
// lease is left for a whole publish, also after waiting for the throttle.
func (r *pollRelay) attempt(ctx, bk context.Context, j job) outcome {
	if ctx.Err() != nil || !r.sink.closed() || r.pace.acquire(ctx) != nil {
		return outcome{c: j.c, skipped: true}
	}
	call := &publishCall{}
	deadline, ok := j.l.publishDeadline(time.Now(), r.cfg.PublishTimeout, r.cfg.Lease/10)
	if !ok {
		r.pace.done(faultEvent, false, call)
		return outcome{c: j.c, skipped: true}
	}
	w := r.sink.watch(deadline)
	pctx, cancel := context.WithDeadline(withCall(bk, call), deadline)
	err := r.publishOne(pctx, j.c)
	err = w.judge(err, j.c.ID, pctx.Err() != nil, call)
	cancel()
	r.pace.done(classify(err), err == nil, call)
	return outcome{c: j.c, err: err, acked: time.Now()}
}

// books collects outcomes and writes them in batches: marks, failure
// records (the event's fault), releases with the attempt given back (the
// sink's fault) and releases of what was never attempted.
type books struct {
	r          *pollRelay
	bk         context.Context
	acks       []uuid.UUID
	failures   []failure
	sinkFaults []failure
	skipped    []uuid.UUID
	// booked are the events of the outcomes booked since the last flush.
	booked []uuid.UUID
	// retryAts are the retry times of every failure written so far.
	retryAts []time.Time
}

func (r *pollRelay) newBooks(bk context.Context) *books { return &books{r: r, bk: bk} }

// add books one outcome and reports whether enough acknowledgements wait
// for a mark now (MarkBatchSize).
func (b *books) add(o outcome) bool {
	r := b.r
	b.booked = append(b.booked, o.c.ID)
	switch {
	case o.skipped:
		b.skipped = append(b.skipped, o.c.ID)
	case o.err == nil:
		r.sink.acked()
		if !o.c.Replay { // a replay's commit is long past: not a handoff
			r.metrics.handoff.Observe(o.acked.Sub(o.c.OccurredAt).Seconds())
		}
		b.acks = append(b.acks, o.c.ID)
	default:
		f := classify(o.err)
		r.metrics.publishErrors[f].Inc()
		switch f {
		case faultEvent:
			b.failures = append(b.failures, failure{c: o.c, err: o.err, delay: r.backoff.Delay(o.c.attempt)})
		default:
			if f == faultSink {
				r.sink.sinkFault(o.err)
			}
			b.sinkFaults = append(b.sinkFaults, r.sinkFailure(o.c, o.err, f))
		}
	}
	return len(b.acks) >= r.cfg.MarkBatchSize
}

// flush writes what was booked since the last flush and returns the events
// that settled and whether any was marked.
func (b *books) flush() (settled []uuid.UUID, marked bool) {
	r := b.r
	marked = len(b.acks) > 0
	r.flushAcks(b.bk, b.acks)
	b.retryAts = append(b.retryAts, r.flushFailures(b.bk, b.failures)...)
	b.retryAts = append(b.retryAts, r.releaseSinkFaults(b.bk, r.cfg.Owner, b.sinkFaults)...)
	if len(b.skipped) > 0 {
		rctx, cancel := context.WithTimeout(b.bk, bookkeepingTimeout)
		if _, err := r.release(rctx, b.skipped); err != nil {
			r.cfg.Logger.Error("outbox relay: releasing unattempted claims failed; they return when their lease expires",
				"owner", r.cfg.Owner, "events", len(b.skipped), "error", err)
		}
		cancel()
	}
	settled = b.booked
	b.acks, b.failures, b.sinkFaults, b.skipped, b.booked = b.acks[:0], nil, nil, b.skipped[:0], nil
	return settled, marked
}

// pipeline is Run's moving parts besides the claimer: the workers and the
// bookkeeper, and the count of claimed events not yet settled.
type pipeline struct {
	r       *pollRelay
	jobs    chan job
	results chan outcome
	workers sync.WaitGroup
	books   sync.WaitGroup

	// open are the claimed events not yet settled: queued, publishing, or
	// waiting for their outcome to be written.
	mu      sync.Mutex
	open    map[uuid.UUID]bool
	settled chan struct{} // a wake-up (capacity one) when events settle
	// backlog is whether the last claim took all it asked for: more is
	// claimable than the pipeline has room for.
	backlog atomic.Bool
}

// markDelay is how long the bookkeeper collects outcomes before a flush.
func (p *pipeline) markDelay() time.Duration {
	if p.backlog.Load() {
		return p.r.cfg.BacklogMarkDelay
	}
	return p.r.cfg.MarkDelay
}

func (r *pollRelay) startPipeline(ctx, bk context.Context) *pipeline {
	p := &pipeline{
		r:       r,
		jobs:    make(chan job, r.cfg.pipelineCapacity()),
		results: make(chan outcome, r.cfg.pipelineCapacity()),
		open:    map[uuid.UUID]bool{},
		settled: make(chan struct{}, 1),
	}
	for range r.cfg.MaxInFlight {
		p.workers.Go(func() {
			for j := range p.jobs {
				p.results <- r.attempt(ctx, bk, j)
			}
		})
	}
	p.books.Go(func() { p.keepBooks(bk) })
	return p
}

// pipelineCapacity is the most claimed events the pipeline holds unsettled.
func (c *RelayConfig) pipelineCapacity() int { return max(c.BatchSize, 2*c.MaxInFlight) }

// room is how many events a claim may take now.
func (p *pipeline) room() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.r.cfg.pipelineCapacity() - len(p.open)
}

// allBooked reports whether every claimed, unsettled event has an outcome
// booked (n of them since the last flush): no other outcome can join the
// next statement before a claim.
func (p *pipeline) allBooked(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return n >= len(p.open)
}

// claim claims at most n events and queues them for the workers. It returns
// how many it claimed.
func (p *pipeline) claim(ctx, bk context.Context, n int) (int, error) {
	r := p.r
	// The claim leaves out what this relay still holds (the SPIN model's
	// pipeline mutants show why only the claim itself can: a check after
	// it comes too late).
	p.mu.Lock()
	held := make([]uuid.UUID, 0, len(p.open))
	for id := range p.open {
		held = append(held, id)
	}
	p.mu.Unlock()
	cctx, cancel := context.WithTimeout(bk, bookkeepingTimeout)
	batch, l, err := r.claimN(cctx, false, n, held)
	cancel()
	if err != nil || len(batch) == 0 {
		return 0, err
	}
	if err := r.afterClaim(ctx, bk, batch); err != nil {
		return 0, err
	}
	p.mu.Lock()
	for _, c := range batch {
		p.open[c.ID] = true
	}
	p.mu.Unlock()
	for _, c := range batch {
		p.jobs <- job{c: c, l: l} // room() keeps the queue within its capacity
	}
	return len(batch), nil
}

// afterClaim runs the relay.after_claim failpoint on a claimed batch; when
// it answers with an error, the batch is released unattempted and the error
// returned.
func (r *pollRelay) afterClaim(ctx, bk context.Context, batch []claimed) error {
	err := r.cfg.Failpoints.Inject(ctx, failpoints.RelayAfterClaim)
	if err == nil {
		return nil
	}
	ids := make([]uuid.UUID, len(batch))
	for i, c := range batch {
		ids[i] = c.ID
	}
	rctx, cancel := context.WithTimeout(bk, bookkeepingTimeout)
	defer cancel()
	if _, rerr := r.release(rctx, ids); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return fmt.Errorf("outbox: after claim: %w", err)
}

// keepBooks books every outcome, flushing at MarkBatchSize acknowledgements,
// MarkDelay (or BacklogMarkDelay) after the first unflushed outcome, or once every open event is
// booked, and tells the claimer: room freed up, and a mark may have made
// successors claimable.
func (p *pipeline) keepBooks(bk context.Context) {
	b := p.r.newBooks(bk)
	var timerC <-chan time.Time
	flush := func() {
		timerC = nil
		settled, marked := b.flush()
		if len(settled) == 0 {
			return
		}
		p.mu.Lock()
		for _, id := range settled {
			delete(p.open, id)
		}
		p.mu.Unlock()
		select {
		case p.settled <- struct{}{}:
		default:
		}
		if marked {
			p.r.wakeUp()
		}
		if len(b.retryAts) > 0 {
			p.r.wakeAt(b.retryAts)
			b.retryAts = nil
		}
	}
	for {
		select {
		case o, ok := <-p.results:
			if !ok {
				flush()
				return
			}
			if b.add(o) || p.allBooked(len(b.booked)) {
				flush()
			} else if timerC == nil {
				timerC = time.After(p.markDelay())
			}
		case <-timerC:
			flush()
		}
	}
}

// stop lets the queued and in-flight events finish (the workers return the
// queued ones unattempted once Run's context ended) and their outcomes be
// written.
func (p *pipeline) stop() {
	close(p.jobs)
	p.workers.Wait()
	close(p.results)
	p.books.Wait()
}
