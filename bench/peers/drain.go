package main

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/namedsql"
)

// seedChunk is how many backlog events one seeding transaction enqueues.
const seedChunk = 500

// drainTimeout bounds one drain; far above any healthy run.
const drainTimeout = 10 * time.Minute

// seed enqueues events through the contender's own API, seedChunk to a
// transaction, in their listed order.
func seed(ctx context.Context, c Contender, cfg *pgxpool.Config, p Profile, events []Event) error {
	pool, err := openPool(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	for start := 0; start < len(events); start += seedChunk {
		chunk := events[start:min(start+seedChunk, len(events))]
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			return c.Enqueue(ctx, tx, p, &pgx.Batch{}, chunk)
		}); err != nil {
			return fmt.Errorf("seed %s: %w", c.Name(), err)
		}
	}
	return nil
}

// drainResult is one drain of a backlog.
type drainResult struct {
	elapsed time.Duration
	// start is when the contender was started; ids are the backlog's
	// events.
	start time.Time
	ids   []uuid.UUID
	tally tally
	// statements, walBytes and deadTuples are what the drain cost the
	// database, from Start until the consumer stopped and disconnected.
	statements, walBytes, deadTuples int64
	// enqueueWALBytes and enqueueDeadTuples are what seeding the backlog
	// cost it.
	enqueueWALBytes, enqueueDeadTuples int64
}

// drain seeds n events over m orders (laid out by seed), then starts the contender with p and
// times it from Start to the sink's receipt of the last distinct event. next
// is the sink behind the recorder (nil: a no-op sink).
func (b *bench) drain(ctx context.Context, c Contender, cfg *pgxpool.Config, p Profile, n, m int, layout uint64, next Sink) (drainResult, error) {
	return b.drainObserved(ctx, c, cfg, p, n, m, layout, next, nil, nil)
}

// drainObserved is [bench.drain] calling started (when not nil) right
// before the contender starts, after the backlog is seeded, and delivered
// (when not nil) once the sink has every event, before the contender
// stops: the timed window, with the contender's connections open.
func (b *bench) drainObserved(ctx context.Context, c Contender, cfg *pgxpool.Config, p Profile, n, m int, layout uint64, next Sink, started, delivered func()) (drainResult, error) {
	events, err := backlog(n, m, layout)
	if err != nil {
		return drainResult{}, err
	}
	churnSeed, err := churn(ctx, cfg)
	if err != nil {
		return drainResult{}, err
	}
	walSeed, err := b.srv.walPosition(ctx)
	if err != nil {
		return drainResult{}, err
	}
	if err := seed(ctx, c, cfg, p, events); err != nil {
		return drainResult{}, err
	}
	walSeeded, err := b.srv.walPosition(ctx)
	if err != nil {
		return drainResult{}, err
	}
	if err := analyze(ctx, cfg); err != nil {
		return drainResult{}, err
	}
	walBefore, err := b.srv.walPosition(ctx)
	if err != nil {
		return drainResult{}, err
	}
	churnBefore, err := churn(ctx, cfg)
	if err != nil {
		return drainResult{}, err
	}
	counter := &statementCounter{}
	pool, err := openPool(ctx, cfg, counter)
	if err != nil {
		return drainResult{}, err
	}
	defer pool.Close()
	// Only the seeded backlog is counted: the write phase's events are
	// still in the contender's table before the first drain, and counting
	// them stopped the timer that many events early.
	rec := newBacklogRecorder(next, events)
	if started != nil {
		started()
	}
	start := time.Now()
	stop, err := c.Start(ctx, pool, rec, p)
	if err != nil {
		return drainResult{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, drainTimeout)
	waitErr := rec.wait(wctx)
	cancel()
	if waitErr == nil && delivered != nil {
		delivered()
	}
	res := drainResult{elapsed: time.Since(start), start: start, enqueueWALBytes: walSeeded - walSeed, enqueueDeadTuples: churnBefore - churnSeed}
	for _, e := range events {
		res.ids = append(res.ids, e.ID)
	}
	// Untimed: let the contender record the last deliveries (outflow's
	// marks, River's completions, Watermill's offset) before it stops, so a
	// stop in the middle does not leave them to be delivered again.
	if waitErr == nil {
		waitErr = settle(ctx, c, cfg)
	}
	stopErr := stop(context.WithoutCancel(ctx))
	pool.Close()
	res.tally = rec.tally()
	if waitErr != nil {
		return res, fmt.Errorf("%s delivered %d of %d events: %w", c.Name(), res.tally.distinct, n, waitErr)
	}
	if stopErr != nil {
		return res, fmt.Errorf("stop %s: %w", c.Name(), stopErr)
	}
	res.statements = counter.n.Load()
	walAfter, err := b.srv.walPosition(ctx)
	if err != nil {
		return res, err
	}
	res.walBytes = walAfter - walBefore
	churnAfter, err := churn(ctx, cfg)
	if err != nil {
		return res, err
	}
	res.deadTuples = churnAfter - churnBefore
	return res, nil
}

// settle waits until c has no pending event, asking on a pool of its own so
// that the consumer's statement count stays the consumer's.
func settle(ctx context.Context, c Contender, cfg *pgxpool.Config) error {
	pool, err := openPool(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := c.Pending(ctx, pool)
		if err != nil {
			return fmt.Errorf("count pending: %w", err)
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d events delivered but still pending a minute later", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// analyze gathers the scratch database's statistics (Analyze).
func analyze(ctx context.Context, cfg *pgxpool.Config) error {
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = qAnalyze.Exec(ctx, conn, namedsql.NoArgs{})
	return err
}
