package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// core is what every source's relay shares toward the sink: its settings,
// the publish metrics, the retry backoff, the breaker on the publisher's
// downstream and its probe, the throttle, and the configuration of the
// LISTEN connection. The poll relay embeds it; the log relay holds one; a
// cdc relay's stream shares its sweeper's. So the three sources behave the
// same toward a sink.
type core struct {
	pool         *pgxpool.Pool
	pub          Publisher
	cfg          RelayConfig
	listenConfig *pgx.ConnConfig
	metrics      *metrics
	backoff      Backoff
	sink         *breaker
	pace         *throttle
	probe        func(context.Context) error // nil: the publisher is no Prober
}

// pollRelay hands committed outbox events to a [Publisher]: it claims a
// batch with a durable lease, publishes outside any transaction, marks the
// acknowledged events published (fenced by its owner), records failures
// with backoff or quarantine, and claims again. Run it in as many processes
// as you like: leases and SKIP LOCKED keep them off each other's events,
// and the claim keeps one lane per aggregate.
type pollRelay struct {
	*core
	wake chan struct{}
	// retryAts brings retry times recorded outside the loop (a CDC stream's
	// failures) to an idle loop.
	retryAts chan []time.Time
	running  atomic.Bool
	// sweep is set on the sweeper of a CDC relay (see cdc.go): its claims
	// leave young events to the stream, and it does not LISTEN (every
	// insert notifies, and the stream has those events).
	sweep *sweeper
}

// errorBackoff paces the loop after a failed claim (the database is away).
var errorBackoff = Backoff{Base: 100 * time.Millisecond, Max: 5 * time.Second}

// bookkeepingTimeout bounds a mark, failure record or release. They run on a
// context detached from Run's, so a shutdown still records what it published.
const bookkeepingTimeout = 15 * time.Second

// newPollRelay returns a poll relay over pool that publishes through pub,
// with cfg's zero fields defaulted. It also opens one dedicated connection
// from pool's configuration for LISTEN.
func newPollRelay(pool *pgxpool.Pool, pub Publisher, cfg RelayConfig) (*pollRelay, error) {
	c, err := newCore(pool, pub, cfg, true)
	if err != nil {
		return nil, err
	}
	return &pollRelay{core: c, wake: make(chan struct{}, 1), retryAts: make(chan []time.Time, 64)}, nil
}

// newCore is a relay's shared part; backlog registers the gauges of
// outbox_events' backlog (the log relay's does not: see newMetrics).
func newCore(pool *pgxpool.Pool, pub Publisher, cfg RelayConfig, backlog bool) (*core, error) {
	if pool == nil || pub == nil {
		return nil, errors.New("outbox: NewRelay needs a pool and a Publisher")
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer, backlog)
	if err != nil {
		return nil, err
	}
	lc := pool.Config().ConnConfig.Copy()
	if lc.RuntimeParams == nil {
		lc.RuntimeParams = map[string]string{}
	}
	lc.RuntimeParams["application_name"] = listenerApplicationName(cfg.Owner)
	var probe func(context.Context) error
	if p, ok := pub.(Prober); ok {
		probe = p.Probe
	}
	return &core{
		sink:         newBreaker(&cfg, m.sinkUp, pool),
		pace:         newThrottle(&cfg, m.throttled),
		probe:        probe,
		pool:         pool,
		pub:          pub,
		cfg:          cfg,
		listenConfig: lc,
		metrics:      m,
		backoff:      Backoff{Base: cfg.RetryBase, Max: cfg.RetryMax},
	}, nil
}

// listenerApplicationName is the application_name of the listener connection
// of the relay called owner, as pg_stat_activity shows it.
func listenerApplicationName(owner string) string {
	name := "outbox-listen " + owner
	if len(name) > 63 { // PostgreSQL's NAMEDATALEN-1
		name = name[:63]
	}
	return name
}

// Owner returns the relay's identity, as written to claimed_by.
func (r *pollRelay) Owner() string { return r.cfg.Owner }

// Config returns the relay's configuration with defaults applied.
func (r *pollRelay) Config() RelayConfig { return r.cfg }

// Run relays until ctx ends, then shuts down gracefully: it stops claiming,
// lets in-flight publishes finish (each bounded by PublishTimeout), marks the
// acknowledged events, releases the claims it never attempted, and returns
// nil. It returns an error only when called twice.
func (r *pollRelay) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("outbox: Relay.Run called twice; create one Relay per loop")
	}
	bg, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	if r.sweep == nil {
		wg.Go(func() { r.listen(bg) })
	}
	if r.cfg.Registerer != nil {
		wg.Go(func() { r.gaugeLoop(bg) })
	}

	// The pipeline's bookkeeping outlives a shutdown signal: what was
	// published gets marked, what was not gets released.
	bk := context.WithoutCancel(ctx)
	p := r.startPipeline(ctx, bk)
	defer p.stop()
	// A claim waits for this much room, so that a busy relay claims in
	// batches rather than a few events at a time: half the pipeline's
	// capacity, at most a batch, which leaves the other half queued for
	// the workers while the claim runs.
	minClaim := max(1, min(r.cfg.BatchSize, r.cfg.pipelineCapacity()/2))

	var retries retryTimes
	errors := 0
	for ctx.Err() == nil {
		if !r.sink.closed() && !r.sink.probeUntilClosed(ctx, r.probe, r.cfg.PublishTimeout) {
			break // shutting down while the sink is away
		}
		retries.drain(r.retryAts)
		room := p.room()
		if room < minClaim {
			select {
			case <-ctx.Done():
			case <-p.settled:
			}
			continue
		}
		claimedAt := time.Now()
		want := min(room, r.cfg.BatchSize)
		n, err := p.claim(ctx, bk, want)
		if err != nil && ctx.Err() != nil {
			break // shutting down
		}
		if err != nil {
			errors++
			delay := errorBackoff.Delay(errors)
			r.cfg.Logger.Error("outbox relay: claim failed; retrying", "owner", r.cfg.Owner, "retry_in", delay, "error", err)
			if !sleep(ctx, delay) {
				break
			}
			continue
		}
		errors = 0
		retries.prune(claimedAt) // that claim saw every retry due before it began
		p.backlog.Store(n == want)
		if n == want {
			continue // there may be more: claim again while these publish
		}
		// Idle, or all that is claimable is claimed: wait for a NOTIFY, a
		// mark that may have made successors claimable, the safety poll, or
		// the next retry due.
		wait := r.cfg.PollInterval
		if next, ok := retries.next(); ok {
			wait = min(wait, max(time.Until(next), 0))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-r.wake:
		case ts := <-r.retryAts:
			retries.add(ts)
		case <-t.C:
		}
		t.Stop()
	}
	return nil
}

func (r *pollRelay) gaugeLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.GaugeInterval)
	defer t.Stop()
	for {
		if err := r.refreshGauges(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("outbox relay: refreshing backlog gauges failed", "owner", r.cfg.Owner, "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// wakeAt has an idle loop claim again at each of ts (dropped when the loop
// is behind: its safety poll covers them).
func (r *pollRelay) wakeAt(ts []time.Time) {
	if len(ts) == 0 {
		return
	}
	select {
	case r.retryAts <- ts:
	default:
	}
}

// sleep waits d or until ctx ends; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// retryTimes remembers when events this relay backed off become available
// again, so an idle relay wakes for them instead of waiting for the poll.
type retryTimes struct{ at []time.Time }

// maxRetryTimes bounds the memory; beyond it the safety poll takes over.
const maxRetryTimes = 10000

func (rt *retryTimes) add(ts []time.Time) {
	for _, t := range ts {
		if len(rt.at) < maxRetryTimes {
			rt.at = append(rt.at, t)
		}
	}
}

// prune forgets the times that a claim begun at claimStart already covered.
func (rt *retryTimes) prune(claimStart time.Time) {
	rt.at = slices.DeleteFunc(rt.at, func(t time.Time) bool { return !t.After(claimStart) })
}

// drain adds the retry times waiting in ch without blocking.
func (rt *retryTimes) drain(ch <-chan []time.Time) {
	for {
		select {
		case ts := <-ch:
			rt.add(ts)
		default:
			return
		}
	}
}

func (rt *retryTimes) next() (time.Time, bool) {
	if len(rt.at) == 0 {
		return time.Time{}, false
	}
	return slices.MinFunc(rt.at, time.Time.Compare), true
}

// outcome is what became of one claimed event.
type outcome struct {
	c     claimed
	err   error // nil: acknowledged
	acked time.Time
	// skipped: never attempted (shutdown, or too little lease left).
	skipped bool
}

// cycle claims one batch and sees every event in it through: published and
// marked, failed and recorded, or released. It returns the batch size and
// the retry times it set. all is claim's.
func (r *pollRelay) cycle(ctx context.Context, all bool) (int, []time.Time, error) {
	// Bookkeeping must outlive a shutdown signal: what was published gets
	// marked, what was not gets released. The claim too: a claim cancelled
	// after its commit would leave leases this relay does not know it holds.
	bk := context.WithoutCancel(ctx)
	cctx, cancel := context.WithTimeout(bk, bookkeepingTimeout)
	batch, l, err := r.claim(cctx, all)
	cancel()
	if err != nil || len(batch) == 0 {
		return 0, nil, err
	}
	if err := r.afterClaim(ctx, bk, batch); err != nil {
		return 0, nil, err
	}
	return len(batch), r.process(ctx, bk, batch, l), nil
}

// process publishes a claimed batch with up to MaxInFlight calls at once and
// records each outcome; acknowledgements are marked in batches as they come.
// It is the backfill's way (a CDC relay's sweeper drains everything before
// its stream starts); Run keeps its pipeline full across claims instead.
func (r *pollRelay) process(ctx, bk context.Context, batch []claimed, l lease) []time.Time {
	jobs := make(chan job, len(batch))
	for _, c := range batch {
		jobs <- job{c: c, l: l}
	}
	close(jobs)
	results := make(chan outcome, len(batch))
	var wg sync.WaitGroup
	for range min(r.cfg.MaxInFlight, len(batch)) {
		wg.Go(func() {
			for j := range jobs {
				results <- r.attempt(ctx, bk, j)
			}
		})
	}
	b := r.newBooks(bk)
	var timerC <-chan time.Time
	for range len(batch) {
		select {
		case o := <-results:
			if b.add(o) {
				b.flush()
				timerC = nil
			} else if timerC == nil {
				timerC = time.After(r.cfg.MarkDelay)
			}
		case <-timerC:
			b.flush()
			timerC = nil
			b.add(<-results)
		}
	}
	wg.Wait()
	b.flush()
	return b.retryAts
}

func (r *pollRelay) flushAcks(bk context.Context, acks []uuid.UUID) {
	if len(acks) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(bk, bookkeepingTimeout)
	defer cancel()
	marked, err := r.mark(ctx, acks)
	if err != nil {
		// The events stay claimed until their lease expires, then are
		// published again; the publisher absorbs the duplicate.
		r.cfg.Logger.Error("outbox relay: marking acknowledged events failed; they will be published again after their lease",
			"owner", r.cfg.Owner, "events", len(acks), "error", err)
		return
	}
	r.metrics.published.Add(float64(len(marked)))
	if len(marked) < len(acks) {
		r.cfg.Logger.Warn("outbox relay: some acknowledged events were not marked: their lease had been taken over",
			"owner", r.cfg.Owner, "acked", len(acks), "marked", len(marked))
	}
}

// flushFailures records failed publishes and returns when the retried ones
// become available again.
func (r *pollRelay) flushFailures(bk context.Context, fs []failure) []time.Time {
	if len(fs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(bk, bookkeepingTimeout)
	defer cancel()
	recorded, err := r.recordFailures(ctx, fs)
	if err != nil {
		r.cfg.Logger.Error("outbox relay: recording failed publishes failed; they return when their lease expires",
			"owner", r.cfg.Owner, "events", len(fs), "error", err)
		return nil
	}
	var retryAts []time.Time
	now := time.Now()
	for _, f := range fs {
		q, ok := recorded[f.c.ID]
		attrs := []any{"owner", r.cfg.Owner, "event_id", f.c.ID, "event_type", f.c.Type,
			"aggregate_type", f.c.AggregateType, "aggregate_id", f.c.AggregateID,
			"aggregate_sequence", f.c.Sequence, "attempt", f.c.attempt, "error", f.err}
		switch {
		case !ok:
			r.cfg.Logger.Warn("outbox relay: publish failed but the lease had been taken over; not recorded", attrs...)
		case q:
			reason := "permanent error"
			if !f.permanent() {
				reason = fmt.Sprintf("%d attempts used (OUTFLOW_MAX_ATTEMPTS)", r.cfg.MaxAttempts)
			}
			r.cfg.Logger.Error("outbox relay: event quarantined; its aggregate's later events wait for an operator (outboxctl retry or skip)",
				append(attrs, "reason", reason)...)
		default:
			// now is after the statement, whose now() set available_at.
			retryAts = append(retryAts, now.Add(f.delay))
			r.cfg.Logger.Warn("outbox relay: publish failed; will retry", append(attrs, "retry_in", f.delay)...)
		}
	}
	return retryAts
}
