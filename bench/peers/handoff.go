package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// handoffTimeout is how long after the last commit every event must have
// reached the sink.
const handoffTimeout = time.Minute

// handoff places orders at rate per second for d after one second of
// warm-up, each an order insert and its event in one transaction, while the
// contender runs with p; it returns, per order after the warm-up, the time
// from the return of its COMMIT to the sink's receipt of its event.
func (b *bench) handoff(ctx context.Context, c Contender, cfg *pgxpool.Config, p Profile, rate int, d time.Duration, next Sink) ([]time.Duration, error) {
	return b.handoffUntil(ctx, c, cfg, p, rate, d, next, nil)
}

// handoffUntil is [bench.handoff] timed to each event's effect's first step
// (effect) rather than the sink's receipt; nil effect: the receipt.
func (b *bench) handoffUntil(ctx context.Context, c Contender, cfg *pgxpool.Config, p Profile, rate int, d time.Duration, next Sink, effect *effects) ([]time.Duration, error) {
	consumer, err := openPool(ctx, cfg, nil)
	if err != nil {
		return nil, err
	}
	defer consumer.Close()
	producer, err := openPool(ctx, cfg, nil)
	if err != nil {
		return nil, err
	}
	defer producer.Close()

	warm := rate
	total := warm + int(d.Seconds()*float64(rate))
	rec := newRecorder(next, total)
	stop, err := c.Start(ctx, consumer, rec, p)
	if err != nil {
		return nil, err
	}
	defer stop(context.WithoutCancel(ctx)) //nolint:errcheck // a failed stop shows in the next phase

	type commit struct {
		event Event
		at    time.Time
	}
	commits := make([]commit, total)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := range total {
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil, ctx.Err()
		case <-tick.C:
		}
		wg.Go(func() {
			order, e, err := newOrder()
			if err == nil {
				err = pgx.BeginFunc(ctx, producer, func(tx pgx.Tx) error { return c.Enqueue(ctx, tx, p, order, []Event{e}) })
			}
			at := time.Now() // COMMIT has returned
			if err != nil {
				mu.Lock()
				firstErr = fmt.Errorf("place order: %w", err)
				mu.Unlock()
				return
			}
			commits[i] = commit{event: e, at: at}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	wctx, cancel := context.WithTimeout(ctx, handoffTimeout)
	defer cancel()
	if err := rec.wait(wctx); err != nil {
		return nil, fmt.Errorf("%s: %d of %d events reached the sink within %s of the last commit",
			c.Name(), rec.tally().distinct, total, handoffTimeout)
	}
	arrival := rec.arrival
	if effect != nil {
		ids := make([]uuid.UUID, len(commits))
		for i, cm := range commits {
			ids[i] = cm.event.ID
		}
		if _, err := effect.waitAll(wctx, ids); err != nil {
			return nil, fmt.Errorf("%s: %w within %s of the last commit", c.Name(), err, handoffTimeout)
		}
		arrival = effect.startedAt
	}
	// Untimed: the next phase must not get this one's deliveries again.
	if err := settle(ctx, c, cfg); err != nil {
		return nil, err
	}
	out := make([]time.Duration, 0, total-warm)
	for _, cm := range commits[warm:] {
		got, _ := arrival(cm.event.ID)
		out = append(out, got.Sub(cm.at))
	}
	return out, nil
}
