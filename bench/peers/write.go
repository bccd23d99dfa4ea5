package main

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/internal/bench/benchstat"
)

// writeResult is the producer's cost of the contender: medians of an
// order-only transaction and of the order plus the contender's enqueue.
type writeResult struct {
	orderOnly, withEvent time.Duration
}

// write times pairs order-only and order+enqueue transactions, in random
// order within each pair so that drift hits both alike, and returns their
// medians (the method of cmd/bench's write_overhead_ratio).
func write(ctx context.Context, c Contender, cfg *pgxpool.Config, pairs int) (writeResult, error) {
	pool, err := openPool(ctx, cfg, nil)
	if err != nil {
		return writeResult{}, err
	}
	defer pool.Close()
	orderOnly := func() error {
		order, _, err := newOrder()
		if err != nil {
			return err
		}
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, order).Close() })
	}
	withEvent := func() error {
		order, e, err := newOrder()
		if err != nil {
			return err
		}
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return c.Enqueue(ctx, tx, Default, order, []Event{e}) })
	}
	for range 20 { // connections and plan caches
		if err := orderOnly(); err != nil {
			return writeResult{}, err
		}
		if err := withEvent(); err != nil {
			return writeResult{}, err
		}
	}
	only := make([]time.Duration, 0, pairs)
	with := make([]time.Duration, 0, pairs)
	timed := func(f func() error, into *[]time.Duration) error {
		start := time.Now()
		if err := f(); err != nil {
			return err
		}
		*into = append(*into, time.Since(start))
		return nil
	}
	type side struct {
		run  func() error
		into *[]time.Duration
	}
	for range pairs {
		pair := [2]side{{orderOnly, &only}, {withEvent, &with}}
		if rand.IntN(2) == 0 {
			pair[0], pair[1] = pair[1], pair[0]
		}
		for _, s := range pair {
			if err := timed(s.run, s.into); err != nil {
				return writeResult{}, err
			}
		}
	}
	return writeResult{orderOnly: benchstat.Median(only), withEvent: benchstat.Median(with)}, nil
}
