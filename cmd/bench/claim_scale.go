package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/internal/bench/benchstat"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/outboxtest/outboxbench"
)

// measureClaimScale checks that a claim's cost follows the batch, not the
// table: the relay's claim statement on a table with claimPublished
// published and claimPending pending rows against a table holding nothing
// but one batch of pending rows. Both claims return a full batch; each runs
// in a transaction that is rolled back, so every sample sees the same table.
// Samples alternate between the two tables in random order.
func (b *bench) measureClaimScale(ctx context.Context) error {
	small, doneSmall, err := b.srv.scratchPool(ctx, "claim_small")
	if err != nil {
		return err
	}
	defer doneSmall()
	large, doneLarge, err := b.srv.scratchPool(ctx, "claim_large")
	if err != nil {
		return err
	}
	defer doneLarge()
	defaults, err := relayDefaults(small)
	if err != nil {
		return err
	}
	batch := defaults.BatchSize
	samples := b.cfg.claimSamples

	// For context: the claim on a table with nothing in it.
	empty := make([]time.Duration, 0, samples)
	for i := range samples + 20 {
		d, got, err := claimOnce(ctx, small, defaults)
		if err != nil {
			return err
		}
		if got != 0 {
			return fmt.Errorf("claim on an empty table returned %d events", got)
		}
		if i >= 20 {
			empty = append(empty, d)
		}
	}

	b.progress("claim: seeding %d published + %d pending events (%d aggregates) with generate_series", b.cfg.claimPublished,
		b.cfg.claimPending, b.cfg.claimPending/10)
	seedStart := time.Now()
	if _, err := qSeedPublished.Exec(ctx, large, seedPublishedArgs{Events: b.cfg.claimPublished}); err != nil {
		return fmt.Errorf("seed published events: %w", err)
	}
	if _, err := qSeedPending.Exec(ctx, large, seedArgs{Events: b.cfg.claimPending, Aggregates: b.cfg.claimPending / 10}); err != nil {
		return fmt.Errorf("seed pending events: %w", err)
	}
	if _, err := qSeedPending.Exec(ctx, small, seedArgs{Events: batch, Aggregates: batch}); err != nil {
		return fmt.Errorf("seed pending events: %w", err)
	}
	for _, p := range []*pgxpool.Pool{small, large} {
		if _, err := qAnalyzeOutbox.Exec(ctx, p, namedsql.NoArgs{}); err != nil {
			return err
		}
	}
	b.progress("  seeded and analyzed in %s; %d claims on each table, interleaved", time.Since(seedStart).Round(100*time.Millisecond), samples)

	var base, scaled []time.Duration
	for i := range samples + 20 {
		pools := []*pgxpool.Pool{small, large}
		if rand.IntN(2) == 0 {
			pools[0], pools[1] = large, small
		}
		for _, p := range pools {
			d, got, err := claimOnce(ctx, p, defaults)
			if err != nil {
				return err
			}
			if got != batch {
				return fmt.Errorf("claim returned %d events, want a full batch of %d", got, batch)
			}
			if i < 20 { // warm-up
				continue
			}
			if p == small {
				base = append(base, d)
			} else {
				scaled = append(scaled, d)
			}
		}
	}
	mBase, mScaled := benchstat.Median(base), benchstat.Median(scaled)
	b.rep.add(metric{name: "claim_empty_p50_ms", value: benchstat.Ms(benchstat.Median(empty)), decimals: 2})
	b.rep.add(metric{name: "claim_base_p50_ms", value: benchstat.Ms(mBase), decimals: 2})
	b.rep.add(metric{name: "claim_large_p50_ms", value: benchstat.Ms(mScaled), decimals: 2})
	b.rep.add(metric{name: "claim_scale_ratio", value: benchstat.Ratio(float64(mScaled), float64(mBase)), decimals: 2, target: atMost(1.5)})
	b.rep.note("claim scale: the relay's RelayClaim (outboxbench.Claim) with batch %d, each in a transaction rolled back after the "+
		"rows are read; %d samples per table, interleaved in random order. large = %d published + %d pending rows "+
		"(%d aggregates), built with generate_series then ANALYZE; base = only %d pending rows, so both claims return a "+
		"full batch (claim_empty_p50_ms, on a table with no rows, claims nothing and is shown for context). "+
		"claim_scale_ratio = median large / median base.",
		batch, samples, b.cfg.claimPublished, b.cfg.claimPending, b.cfg.claimPending/10, batch)
	return nil
}

// claimOnce times one claim statement (sent and every row read) in a
// transaction it then rolls back.
func claimOnce(ctx context.Context, pool *pgxpool.Pool, cfg outbox.RelayConfig) (time.Duration, int, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the point: nothing of the claim stays
	start := time.Now()
	rows, err := outboxbench.Claim(ctx, tx, outboxbench.ClaimArgs{
		Owner: "bench-claim", BatchSize: cfg.BatchSize, Lease: cfg.Lease, MaxAttempts: cfg.MaxAttempts,
	})
	if err != nil {
		return 0, 0, fmt.Errorf("claim: %w", err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("claim: %w", err)
	}
	return time.Since(start), n, nil
}
