package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/internal/bench/benchstat"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/outboxtest/outboxbench"
)

// measureRelayNoop measures what the relay costs on the database path alone:
// relay_noop_events_per_s is the relay with a publisher that acknowledges at
// once, draining a backlog; raw_claim_mark_per_s is the relay's own claim and
// mark statements (outbox/outboxtest/outboxbench) driven in a tight loop over the same
// backlog with nothing else. Their ratio is the relay's overhead: its
// goroutines, mark batching and bookkeeping.
func (b *bench) measureRelayNoop(ctx context.Context) error {
	n := b.cfg.noopEvents
	aggregates := n / b.cfg.noopPerAggregate
	pool, done, err := b.srv.scratchPool(ctx, "noop")
	if err != nil {
		return err
	}
	defer done()
	defaults, err := relayDefaults(pool)
	if err != nil {
		return err
	}

	seed := func() error {
		if _, err := qTruncateOutbox.Exec(ctx, pool, namedsql.NoArgs{}); err != nil {
			return err
		}
		if _, err := qSeedPending.Exec(ctx, pool, seedArgs{Events: n, Aggregates: aggregates}); err != nil {
			return fmt.Errorf("seed %d events: %w", n, err)
		}
		_, err := qAnalyzeOutbox.Exec(ctx, pool, namedsql.NoArgs{})
		return err
	}
	var relayTime, rawTime time.Duration
	var relayN, rawN int
	var perRound []string
	for round := range b.cfg.noopRounds {
		var roundRaw, roundRelay float64
		relayFirst := round%2 == 1
		for i := range 2 {
			if err := seed(); err != nil {
				return err
			}
			if (i == 0) != relayFirst { // raw
				b.progress("noop round %d: raw claim+mark loop over %d events (%d aggregates)", round+1, n, aggregates)
				d, err := rawClaimMark(ctx, pool, n, defaults)
				if err != nil {
					return err
				}
				rawTime += d
				rawN += n
				roundRaw = perSecond(n, d)
				b.progress("  %.0f events/s", roundRaw)
				continue
			}
			b.progress("noop round %d: relay with a no-op publisher over %d events (%d aggregates)", round+1, n, aggregates)
			res, err := drain(ctx, pool, outbox.PublisherFunc(noopPublish), n, b.logger)
			if err != nil {
				return err
			}
			relayTime += res.elapsed
			relayN += n
			roundRelay = perSecond(n, res.elapsed)
			b.progress("  %.0f events/s", roundRelay)
		}
		perRound = append(perRound, fmt.Sprintf("%.2f", benchstat.Ratio(roundRelay, roundRaw)))
	}
	relay, raw := perSecond(relayN, relayTime), perSecond(rawN, rawTime)
	b.rep.add(metric{name: "relay_noop_events_per_s", value: relay, target: atLeast(5000)})
	b.rep.add(metric{name: "raw_claim_mark_per_s", value: raw})
	b.rep.add(metric{name: "relay_overhead_ratio", value: benchstat.Ratio(relay, raw), decimals: 2})
	b.rep.note("noop: %d events over %d aggregates (%d each, in sequence order), seeded fresh before each run; relay = "+
		"default Config (batch %d, in-flight %d, mark batches of %d or after %s, %s behind a backlog) with a publisher that returns nil, from Run "+
		"until nothing is unpublished; raw = RelayClaim (batch %d) then RelayMark of the whole batch, one statement each, "+
		"in one goroutine; relay_overhead_ratio = relay / raw (per round: %s).",
		n, aggregates, b.cfg.noopPerAggregate, defaults.BatchSize, defaults.MaxInFlight, defaults.MarkBatchSize,
		defaults.MarkDelay, defaults.BacklogMarkDelay, defaults.BatchSize, strings.Join(perRound, ", "))
	return nil
}

// rawClaimMark claims and marks with the relay's statements until the
// backlog of n events is gone, and returns how long it took.
func rawClaimMark(ctx context.Context, pool *pgxpool.Pool, n int, cfg outbox.RelayConfig) (time.Duration, error) {
	owner := "bench-raw-" + uuid.NewString()
	claim := outboxbench.ClaimArgs{Owner: owner, BatchSize: cfg.BatchSize, Lease: cfg.Lease, MaxAttempts: cfg.MaxAttempts}
	marked := 0
	start := time.Now()
	for {
		rows, err := outboxbench.Claim(ctx, pool, claim)
		if err != nil {
			return 0, fmt.Errorf("claim: %w", err)
		}
		// The relay decodes every column; so does the baseline, whatever
		// columns the statement returns. The first is the event id.
		ids, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (uuid.UUID, error) {
			vals, err := row.Values()
			if err != nil {
				return uuid.Nil, err
			}
			id, ok := vals[0].([16]byte)
			if !ok {
				return uuid.Nil, fmt.Errorf("RelayClaim's first column is %T, want a uuid", vals[0])
			}
			return id, nil
		})
		if err != nil {
			return 0, fmt.Errorf("claim: %w", err)
		}
		if len(ids) == 0 {
			break
		}
		rows, err = outboxbench.Mark(ctx, pool, owner, ids)
		if err != nil {
			return 0, fmt.Errorf("mark: %w", err)
		}
		done, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return 0, fmt.Errorf("mark: %w", err)
		}
		marked += len(done)
	}
	elapsed := time.Since(start)
	if marked != n {
		return 0, fmt.Errorf("raw loop marked %d of %d events", marked, n)
	}
	return elapsed, nil
}
