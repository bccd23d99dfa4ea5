package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/internal/bench/benchstat"
	"github.com/outflow/outflow/outbox/namedsql"
)

// heldResult is one held-horizon round.
type heldResult struct {
	// stall is the longest gap between consecutive deliveries during the
	// hold, the hold's start and release counting as deliveries: the whole
	// hold when nothing was delivered.
	stall time.Duration
	// recovery is from the release until every order committed by then was
	// delivered (0 if they all were before it).
	recovery time.Duration
	// lat is commit to delivery of each order committed from the hold's
	// start until recovery.
	lat []time.Duration
	// committed orders, each delivered (the round fails otherwise).
	committed int
	// heldDelivered is how many orders committed during the hold were
	// delivered before its release: their xids are above the held one.
	heldDelivered int
	tally         tally
	// deadTuples and tableBytes are the contender's Tables after the round.
	deadTuples, tableBytes int64
}

// heldCommit is one order of the round and when its COMMIT returned.
type heldCommit struct {
	event Event
	at    time.Time
}

// heldHorizon runs the held-horizon round: the contender runs with the
// tuned settings and a no-op sink while orders arrive at rate per second;
// after one second of warm-up, another session of the contender's database
// begins a transaction, takes an xid (pg_current_xact_id()) and idles for
// hold, holding back the server's snapshot horizon and the database's
// vacuum horizon, then rolls back. Orders keep arriving until every order
// committed by the release was delivered, then stop; every committed order
// must be delivered (within handoffTimeout), or the round fails.
func (b *bench) heldHorizon(ctx context.Context, c Contender, cfg *pgxpool.Config, rate int, hold time.Duration) (heldResult, error) {
	consumer, err := openPool(ctx, cfg, nil)
	if err != nil {
		return heldResult{}, err
	}
	defer consumer.Close()
	producer, err := openPool(ctx, cfg, nil)
	if err != nil {
		return heldResult{}, err
	}
	defer producer.Close()
	holder, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
	if err != nil {
		return heldResult{}, err
	}
	defer holder.Close(context.WithoutCancel(ctx))

	rec := newRecorder(nil, -1) // never done: the round polls arrivals
	stop, err := c.Start(ctx, consumer, rec, Tuned)
	if err != nil {
		return heldResult{}, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = stop(context.WithoutCancel(ctx))
		}
	}()

	var (
		mu       sync.Mutex
		commits  []heldCommit
		firstErr error
		wg       sync.WaitGroup
		// writing is read-held by each order's transaction until its commit
		// time is taken; the hold takes its xid under the write lock, so an
		// order committed after the hold's start took its xid after it.
		writing sync.RWMutex
	)
	// place writes one order; its commit time is taken under mu, so a
	// reader holding mu has every order committed before that moment.
	place := func() {
		writing.RLock()
		defer writing.RUnlock()
		order, e, err := newOrder()
		if err == nil {
			err = pgx.BeginFunc(ctx, producer, func(tx pgx.Tx) error { return c.Enqueue(ctx, tx, Tuned, order, []Event{e}) })
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("place order: %w", err)
			}
			return
		}
		commits = append(commits, heldCommit{event: e, at: time.Now()})
	}
	pctx, stopProducing := context.WithCancel(ctx)
	producing := make(chan struct{})
	go func() {
		defer close(producing)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for {
			select {
			case <-pctx.Done():
				wg.Wait()
				return
			case <-tick.C:
				wg.Go(place)
			}
		}
	}()
	halt := func() []heldCommit {
		stopProducing()
		<-producing
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(commits)
	}

	select { // warm-up: orders flow before the hold
	case <-ctx.Done():
		halt()
		return heldResult{}, ctx.Err()
	case <-time.After(time.Second):
	}
	holdStart, release, err := holdHorizon(ctx, holder, &writing, hold)
	if err != nil {
		halt()
		return heldResult{}, err
	}
	// Recovery: every order committed by the release delivered.
	var recoveredAt time.Time
	deadline := release.Add(handoffTimeout)
	for {
		mu.Lock()
		before := slices.Clone(commits)
		mu.Unlock()
		last, missing := lastArrival(rec, before, release)
		if missing == 0 {
			recoveredAt = last
			if last.Before(release) {
				recoveredAt = release
			}
			break
		}
		if time.Now().After(deadline) {
			halt()
			return heldResult{}, fmt.Errorf("%s: %d of the orders committed before the release undelivered %s after it",
				c.Name(), missing, handoffTimeout)
		}
		select {
		case <-ctx.Done():
			halt()
			return heldResult{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	all := halt()
	if firstErr != nil {
		return heldResult{}, firstErr
	}
	// Lost: an order committed but never delivered.
	wctx, cancel := context.WithTimeout(ctx, handoffTimeout)
	defer cancel()
	for {
		_, missing := lastArrival(rec, all, time.Now())
		if missing == 0 {
			break
		}
		select {
		case <-wctx.Done():
			return heldResult{}, fmt.Errorf("%s lost %d of %d committed orders (undelivered %s after the last commit)",
				c.Name(), missing, len(all), handoffTimeout)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := settle(ctx, c, cfg); err != nil {
		return heldResult{}, err
	}
	stopped = true
	if err := stop(context.WithoutCancel(ctx)); err != nil {
		return heldResult{}, fmt.Errorf("stop %s: %w", c.Name(), err)
	}
	consumer.Close()
	producer.Close()
	if err := holder.Close(ctx); err != nil {
		return heldResult{}, err
	}

	res := heldResult{committed: len(all), tally: rec.tally(), recovery: recoveredAt.Sub(release)}
	points := []time.Time{holdStart, release}
	for _, cm := range all {
		got, _ := rec.arrival(cm.event.ID)
		if !got.Before(holdStart) && !got.After(release) {
			points = append(points, got)
			if cm.at.After(holdStart) {
				res.heldDelivered++
			}
		}
		if !cm.at.Before(holdStart) && !cm.at.After(recoveredAt) {
			res.lat = append(res.lat, got.Sub(cm.at))
		}
	}
	slices.SortFunc(points, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(points); i++ {
		res.stall = max(res.stall, points[i].Sub(points[i-1]))
	}
	t, err := tablesAfter(ctx, cfg, c)
	if err != nil {
		return heldResult{}, err
	}
	res.deadTuples, res.tableBytes = t.DeadTuples, t.TableBytes
	return res, nil
}

// holdHorizon holds a transaction with an xid open on conn for hold and
// rolls it back: it returns when the xid was taken and when the rollback
// returned. It takes the xid with writing locked.
func holdHorizon(ctx context.Context, conn *pgx.Conn, writing *sync.RWMutex, hold time.Duration) (start, release time.Time, err error) {
	writing.Lock()
	tx, err := conn.Begin(ctx)
	if err == nil {
		_, err = qTransactionID.Value(ctx, tx, namedsql.NoArgs{})
	}
	start = time.Now()
	writing.Unlock()
	if tx != nil {
		defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Rollback it does nothing
	}
	if err != nil {
		return start, release, fmt.Errorf("hold: take an xid: %w", err)
	}
	select {
	case <-ctx.Done():
		return start, release, ctx.Err()
	case <-time.After(hold):
	}
	if err := tx.Rollback(ctx); err != nil {
		return start, release, fmt.Errorf("release the hold: %w", err)
	}
	return start, time.Now(), nil
}

// lastArrival is the latest first arrival of the orders of commits that
// committed by until, and how many of them have not arrived.
func lastArrival(rec *recorder, commits []heldCommit, until time.Time) (last time.Time, missing int) {
	for _, cm := range commits {
		if cm.at.After(until) {
			continue
		}
		got, ok := rec.arrival(cm.event.ID)
		if !ok {
			missing++
		} else if got.After(last) {
			last = got
		}
	}
	return last, missing
}

// tablesAfter reads c's Tables' dead tuples and size once every other
// client of the database has exited (and so flushed its statistics).
func tablesAfter(ctx context.Context, cfg *pgxpool.Config, c Contender) (queueTables, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
	if err != nil {
		return queueTables{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := statsAlone(ctx, conn); err != nil {
		return queueTables{}, err
	}
	return qQueueTables.One(ctx, conn, tablesArgs{Tables: c.Tables()})
}

// heldRound runs the held-horizon round for c in a database of its own,
// peers_<contender>_<pid>_r<round>_held, so that its dead tuples and table
// sizes are the round's alone.
func (b *bench) heldRound(ctx context.Context, c Contender, r int) (heldResult, error) {
	name, cfg, err := b.srv.scratchNamed(ctx, c, fmt.Sprintf("peers_%s_%d_r%d_held", c.Name(), os.Getpid(), r))
	if err != nil {
		return heldResult{}, err
	}
	defer b.srv.Drop(context.WithoutCancel(ctx), name) //nolint:errcheck // close drops leftovers
	b.progress("round %d %s: held horizon, a transaction with an xid open %s while orders arrive at %d/s, tuned settings",
		r+1, c.Name(), b.cfg.heldHorizon, b.cfg.heldRate)
	h, err := b.heldHorizon(ctx, c, cfg, b.cfg.heldRate, b.cfg.heldHorizon)
	if err != nil {
		return heldResult{}, fmt.Errorf("held horizon: %w", err)
	}
	b.progress("  stall %.2f s, recovery %.2f s, p99 %.1f ms, %d dead tuples, %d bytes, %d orders (%d committed and delivered during the hold), 0 lost, %d duplicates",
		h.stall.Seconds(), h.recovery.Seconds(), benchstat.Ms(benchstat.Percentile(h.lat, 99)),
		h.deadTuples, h.tableBytes, h.committed, h.heldDelivered, h.tally.deliveries-h.tally.distinct)
	b.res.add(c.Name(), "held_horizon_stall_s", h.stall.Seconds())
	b.res.addSamples(c.Name(), "held_horizon", h.lat)
	b.res.add(c.Name(), "held_horizon_dead_tuples", float64(h.deadTuples))
	b.res.add(c.Name(), "held_horizon_table_bytes", float64(h.tableBytes))
	b.res.add(c.Name(), "held_horizon_recovery_s", h.recovery.Seconds())
	return h, nil
}
