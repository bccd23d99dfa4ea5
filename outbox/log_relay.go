package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// LogPartitions is the number of the log source's partitions: the rows of
// outbox_log_cursors, and the modulus of outbox_log_partition (a stable
// hash of the aggregate), both fixed by the migration that made them.
const logPartitions = 16

// LogMaxPartitionsDefault is the default of RelayConfig.LogMaxPartitions: all.
const logMaxPartitionsDefault = logPartitions

// logConfig tunes a [logRelay] (RelayConfig.Log*).
type logConfig struct {
	// RelayConfig holds what the log source shares with the polling relay:
	// Owner (written to a partition's cursor row as its lease holder),
	// BatchSize (the read window), Lease (a partition's), PublishTimeout,
	// MaxInFlight (publishes at once per partition, one order at a time),
	// PollInterval (the safety poll of an idle partition, and how often
	// free partitions are looked for), MaxAttempts, RetryBase and RetryMax
	// (a hold's), the breaker, Rate, Registerer (the relay's publish
	// metrics and the log's gauges, not outbox_events' backlog gauges),
	// GaugeInterval, Logger and Failpoints (log.after_read and
	// log.before_advance: with error, the partition's reader dies there as
	// its process would). MarkDelay and MarkBatchSize are unused. Defaults
	// as documented on RelayConfig.
	RelayConfig
	// MaxPartitions is the most partitions this relay reads at once, 1 to
	// [LogPartitions]. Defaults to [LogMaxPartitionsDefault] (all of them).
	// The live relays share the partitions evenly (log_share.go): with n
	// of them each holds 16/n, the first 16 mod n by owner one more, and a
	// relay's MaxPartitions below that leaves the rest to the others; a
	// relay alone takes them all.
	MaxPartitions int
	// ShareDelay is how long this relay must hold more than its share
	// (another relay started, or came back) before it gives a partition
	// back, one per look for free partitions (PollInterval, or a third of
	// the Lease when that is shorter): a relay that comes and goes within
	// it moves nothing. Defaults to the Lease (30 seconds by default).
	ShareDelay time.Duration
}

func (c *logConfig) setDefaults() error {
	if err := c.RelayConfig.setDefaults(); err != nil {
		return err
	}
	if c.MaxPartitions == 0 {
		c.MaxPartitions = logMaxPartitionsDefault
	}
	if c.ShareDelay == 0 {
		c.ShareDelay = c.Lease
	}
	return nil
}

func (c *logConfig) validate() error {
	if err := c.RelayConfig.validate(); err != nil {
		return err
	}
	if c.MaxPartitions < 1 || c.MaxPartitions > logPartitions {
		return fmt.Errorf("outbox: RelayConfig.LogMaxPartitions %d is out of range; use 1 to %d (default %d)", c.MaxPartitions, logPartitions, logMaxPartitionsDefault)
	}
	if c.ShareDelay < 0 {
		return fmt.Errorf("outbox: RelayConfig.LogShareDelay %s is negative; use 0 for the default (the Lease) or a positive duration", c.ShareDelay)
	}
	return nil
}

// LogRelay hands committed events of the append-only log (outbox_log,
// written by an [Enqueuer] with EnqueueConfig.Log) to a [Publisher]: the
// third relay source, OUTFLOW_RELAY_SOURCE=log, which writes nothing per
// event. Its protocol is model/log.pml's, checked with SPIN; the comments
// name its steps (R1-R4, H1-H4, O1-O2).
//
// The log is split into [LogPartitions] partitions by a stable hash of the
// aggregate, each with a cursor row: the last key (gate, pos) its reader
// passed, a lease (owner, lease_until), an epoch and a count of batches
// that died at the position (tries). A relay takes free partitions (R1)
// and runs a reader on each, which reads the events after the cursor in key
// order whose gate is below its snapshot's xmin (R2: the horizon, so a row
// that commits later never lands behind the cursor), publishes them, one
// order at a time and up to MaxInFlight orders at once (R3), and moves the
// cursor over the longest prefix of the batch that is done, in one
// statement fenced by its owner and the epoch it read (R4). The gate is
// the lane's: the enqueue stamps greatest(last_gate, its xid) under the
// order's lock, so an order's events are read in sequence even when a later
// sequence is taken by a transaction with an earlier xid.
//
// An event whose publish fails for its own fault puts its order under a
// hold (inserted by the advance), and only that order: the partition's
// other orders flow on. The partition owner's hold worker publishes a
// held order's events in order, with the attempts, backoff and quarantine
// of the polling relay, and releases the hold once it has caught up with
// the cursor (H1-H4), arming the epoch so a reader whose view still had the
// hold cannot advance over what it skipped. An operator retries or skips a
// quarantined hold (outboxops.RetryLogHold, outboxops.SkipLogHold) and replays an order
// (outboxops.ReplayLogOrder), which puts it under a hold too. A sink fault is never
// the event's (fault.go): the batch stops there and the relay's breaker
// counts it. A reader that dies mid-batch leaves tries counted: its
// successor reads a window of one, and one that dies again isolates the
// event at the position as a quarantined hold.
//
// The horizon is the server's: a transaction open anywhere on it with an
// xid (another database's too) holds back every event committed after it
// began. The reader then looks again soon rather than at the safety poll,
// and outbox_log_horizon_age_seconds says how long it has been held.
//
// A [Relay] of a database switching to the log runs it after
// draining outbox_events, and a poll or cdc relay of a database whose log
// was used runs one first. Retention (outboxops.RetainLog) makes
// the log's range partitions ahead of its sequence and drops whole ranges
// that every cursor passed (docs/operations.md, "Retention of the log").
type logRelay struct {
	pool *pgxpool.Pool
	pub  Publisher
	cfg  logConfig
	// core is what every source shares toward the sink: the breaker,
	// throttle, backoff, probe and publish metrics.
	core    *core
	metrics *logMetrics
	running atomic.Bool

	mu    sync.Mutex
	parts map[int]*logPartition // the partitions with a reader running
	// overSince: since when this relay has held more than its share (zero:
	// it does not), for giveBack.
	overSince time.Time
}

// logPartition is a partition this relay reads.
type logPartition struct {
	id int
	// wake wakes its reader (a NOTIFY), holdsWake its hold worker (an
	// advance inserted holds); both coalesce.
	wake, holdsWake chan struct{}
	// leaseEnd is the local deadline of its lease (UnixNano), renewed by
	// every read: the hold worker's publishes start only within it.
	leaseEnd atomic.Int64

	// The reader's batch in flight, for the hold worker (see mayPublish):
	// reading is set from its read to its advance, viewHeld are the orders
	// its view held.
	mu       sync.Mutex
	reading  bool
	viewHeld map[aggregateKey]bool
	// holdWaiting: the hold worker waits for the batch in flight to end.
	holdWaiting atomic.Bool
	// renewWanted: the hold worker waits for the reader to renew the lease
	// (an idle reader renews only once half of it is gone, which may leave
	// too little for a publish).
	renewWanted atomic.Bool
	// holdsDue is when the next hold in backoff is due (UnixNano; 0: none
	// known), for the hold worker's wait.
	holdsDue atomic.Int64
	// release: the relay holds more than its share; the reader stops after
	// its batch's advance and gives the lease back (giveBack).
	release atomic.Bool
	// failedAhead, the reader's own: the events whose publish failed for
	// their own fault in its last batch but whose advance recorded no hold
	// (an earlier event of the batch was left unfinished, or the epoch
	// moved). Read again, each fails again without a publish, so its
	// attempt counts once and its backoff holds, as on the poll source
	// (issue 37). Lost with the partition: a new owner publishes it again.
	failedAhead map[uuid.UUID]logFailure
}

// startBatch records a read begun: until its view is known (setView) the
// hold worker publishes nothing.
func (p *logPartition) startBatch() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reading, p.viewHeld = true, nil
}

// setView records the holds the read's view has.
func (p *logPartition) setView(held map[aggregateKey]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.viewHeld = held
}

// endBatch records the batch's advance (or its end without one), and wakes
// a hold worker that waited for it.
func (p *logPartition) endBatch() {
	p.mu.Lock()
	p.reading, p.viewHeld = false, nil
	p.mu.Unlock()
	if p.holdWaiting.Swap(false) {
		wakeChan(p.holdsWake)
	}
}

// mayPublish reports whether the hold worker may publish an event of the
// held order k now: the reader has no batch in flight, or its batch's view
// holds k (it skips the order). A hold an operator's replay made while a
// batch read before it is in flight is not in that view: the reader may be
// publishing the order's later events, so the hold's first publish waits
// for that batch's advance, which the replay's epoch refuses (the batch is
// read again, with the hold). The read is marked before its first
// statement, so a replay that commits while it reads is in its view or
// waits for it. Holds the advance makes are in every later view.
// model/README.md, what the model found, 5.
func (p *logPartition) mayPublish(k aggregateKey) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.reading || p.viewHeld[k]
}

// horizonBackoff paces the reads of a partition whose events wait above the
// horizon: 5ms, doubling, at most a second (and the safety poll).
var horizonBackoff = Backoff{Base: 5 * time.Millisecond, Max: time.Second}

// errLogLeaseLost is a partition's lease found lost: its reader stops.
var errLogLeaseLost = errors.New("outbox: the partition's lease is lost")

// NewLogRelay returns a log relay over pool that publishes through pub, with
// cfg's zero fields defaulted. It opens one dedicated connection from
// pool's configuration for LISTEN.
func newLogRelay(pool *pgxpool.Pool, pub Publisher, cfg logConfig) (*logRelay, error) {
	if pool == nil || pub == nil {
		return nil, errors.New("outbox: NewRelay needs a pool and a Publisher")
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c, err := newCore(pool, pub, cfg.RelayConfig, false)
	if err != nil {
		return nil, err
	}
	m, err := newLogMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &logRelay{pool: pool, pub: pub, cfg: cfg, core: c, metrics: m, parts: map[int]*logPartition{}}, nil
}

// Owner returns the relay's identity, as written to a partition's cursor.
func (r *logRelay) Owner() string { return r.cfg.Owner }

// Config returns the relay's configuration with defaults applied.
func (r *logRelay) Config() logConfig { return r.cfg }

// Run relays until ctx ends, then shuts down gracefully: each partition's
// reader finishes its batch's publishes, advances over what is done and
// gives its lease back. It returns an error only when called twice.
func (r *logRelay) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("outbox: LogRelay.Run called twice; create one LogRelay per loop")
	}
	bg, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// Last: the partitions are given back first (the readers end before
	// wg.Wait returns), so the relays that stay take them at their next
	// look.
	defer r.leave(ctx)
	defer wg.Wait()
	defer stop()
	l := listener{config: r.core.listenConfig, stmt: qLogListen, channel: "outbox_log", logger: r.cfg.Logger, owner: r.cfg.Owner}
	wg.Go(func() { l.run(bg, r.notified) })
	if r.cfg.Registerer != nil {
		wg.Go(func() { r.gaugeLoop(bg) })
	}

	failures := 0
	for ctx.Err() == nil {
		if !r.core.sink.closed() && !r.core.sink.probeUntilClosed(ctx, r.core.probe, r.cfg.PublishTimeout) {
			break
		}
		share, _, err := r.share(ctx)
		if err == nil {
			r.giveBack(share, time.Now())
			var taken []*logPartition
			taken, err = r.take(ctx, share)
			for _, p := range taken {
				wg.Go(func() { r.readPartition(ctx, p) })
			}
		}
		if err != nil && ctx.Err() == nil {
			failures++
			delay := errorBackoff.Delay(failures)
			r.cfg.Logger.Error("outbox log relay: taking partitions failed; retrying", "owner", r.cfg.Owner, "retry_in", delay, "error", err)
			sleep(ctx, delay)
			continue
		}
		failures = 0
		// Often enough that the registry's row never runs out between looks.
		sleep(ctx, min(r.cfg.PollInterval, r.cfg.Lease/3))
	}
	return nil
}

// take takes free partitions (R1), up to share (and MaxPartitions) read at
// once, and registers them as running.
func (r *logRelay) take(ctx context.Context, share int) ([]*logPartition, error) {
	r.mu.Lock()
	running := make([]int, 0, len(r.parts))
	for id := range r.parts {
		running = append(running, id)
	}
	r.mu.Unlock()
	room := min(share, r.cfg.MaxPartitions) - len(running)
	if room <= 0 {
		return nil, nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	// Measured before the statement: the local deadline never outlives the
	// lease_until the database computes.
	l := newLease(time.Now(), r.cfg.Lease)
	ids, err := qLogTake.All(cctx, r.pool, logTakeArgs{
		Owner: r.cfg.Owner, LeaseMS: r.cfg.Lease.Milliseconds(), MaxPartitions: room, Running: running,
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: take log partitions: %w", err)
	}
	slices.Sort(ids)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*logPartition, 0, len(ids))
	for _, id := range ids {
		p := &logPartition{id: id, wake: make(chan struct{}, 1), holdsWake: make(chan struct{}, 1)}
		p.leaseEnd.Store(l.deadline.UnixNano())
		r.parts[id] = p
		out = append(out, p)
	}
	r.metrics.held.Set(float64(len(r.parts)))
	if len(ids) > 0 {
		r.cfg.Logger.Info("outbox log relay: took partitions", "owner", r.cfg.Owner, "partitions", ids)
	}
	return out, nil
}

// notified wakes the reader of the partition a NOTIFY names, or every
// reader ("": the listener has just connected).
func (r *logRelay) notified(payload string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if payload == "" {
		for _, p := range r.parts {
			wakeChan(p.wake)
		}
		return
	}
	if id, err := strconv.Atoi(payload); err == nil {
		if p := r.parts[id]; p != nil {
			wakeChan(p.wake)
		}
	}
}

// wakeChan sends a wake-up on ch unless one is waiting already.
func wakeChan(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// readPartition runs p's reader and its hold worker until ctx ends or the
// relay gives p back (then it gives the lease back, after the batch in
// flight advanced), or the lease is found lost.
func (r *logRelay) readPartition(ctx context.Context, p *logPartition) {
	hctx, hstop := context.WithCancel(ctx)
	var hw sync.WaitGroup
	hw.Go(func() { r.holdWorker(hctx, p) })
	lost := false
	defer func() {
		hstop()
		hw.Wait()
		if !lost {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
			if _, err := qLogRelease.Exec(rctx, r.pool, logOwnedArgs{Partition: p.id, Owner: r.cfg.Owner}); err != nil {
				r.cfg.Logger.Warn("outbox log relay: giving a partition's lease back failed; another relay takes it once it expires",
					"owner", r.cfg.Owner, "partition", p.id, "error", err)
			}
			cancel()
		}
		r.mu.Lock()
		delete(r.parts, p.id)
		r.metrics.held.Set(float64(len(r.parts)))
		r.mu.Unlock()
	}()
	failures, horizon := 0, 0
	for ctx.Err() == nil && !p.release.Load() {
		if !r.core.sink.closed() {
			// Run probes the sink; the reader waits for the breaker.
			sleep(ctx, r.cfg.PollInterval)
			continue
		}
		next, err := r.cycle(ctx, p)
		if errors.Is(err, errLogDied) {
			// As a dead process: no advance, no release; the hold worker
			// stops, the lease expires and a relay takes the partition over.
			lost = true
			r.cfg.Logger.Error("outbox log relay: a partition's reader died at a failpoint", "owner", r.cfg.Owner, "partition", p.id, "error", err)
			return
		}
		if errors.Is(err, errLogLeaseLost) {
			lost = true
			r.cfg.Logger.Warn("outbox log relay: lost a partition's lease; its reader stops", "owner", r.cfg.Owner, "partition", p.id)
			return
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			delay := errorBackoff.Delay(failures)
			r.cfg.Logger.Error("outbox log relay: a partition's batch failed; retrying", "owner", r.cfg.Owner, "partition", p.id, "retry_in", delay, "error", err)
			sleep(ctx, delay)
			continue
		}
		failures = 0
		// An idle reader renews its lease only by reading: often enough
		// that it never runs out between reads.
		wait := min(r.cfg.PollInterval, r.cfg.Lease/3)
		switch next {
		case logAgain:
			continue
		case logHorizon:
			// Committed events wait for an older transaction to end: look
			// again soon, backing off toward the safety poll.
			horizon++
			wait = min(wait, horizonBackoff.Ceiling(horizon))
		default:
			horizon = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-p.wake:
		case <-t.C:
		}
		t.Stop()
	}
}
