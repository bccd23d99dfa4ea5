package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/internal/bench/benchcpu"
	"github.com/outflow/outflow/internal/bench/benchdb"
	"github.com/outflow/outflow/internal/bench/benchstat"
	"github.com/outflow/outflow/internal/routes"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// measureHandoff compares Temporal's own start throughput with the relay's
// on the same server: bare_start_per_s is a plain ExecuteWorkflow loop in as
// many goroutines as the relay's MaxInFlight; relay_per_s is the relay with
// the Temporal publisher draining as many pre-enqueued orders. Rounds
// alternate the order (bare, relay, relay, bare, ...) so drift hits both.
func (b *bench) measureHandoff(ctx context.Context) error {
	n := b.cfg.handoffEvents
	var backends backendPlacement
	pool, done, err := b.srv.scratchPool(ctx, "handoff", backends.follow)
	if err != nil {
		return err
	}
	defer done()
	pub, err := temporalpub.New(b.tc, client.Options{Namespace: b.namespace}, temporalpub.Config{TaskQueue: b.taskQueue, Routes: routes.Orders()})
	if err != nil {
		return err
	}
	defaults, err := relayDefaults(pool)
	if err != nil {
		return err
	}
	inFlight := defaults.MaxInFlight
	b.progress("handoff: %s", backends.placement())

	// Warm both paths, untimed, as a round of each would: the pool's
	// connections and their plans of the claim and the mark (a drain of
	// 50 events claimed in one batch and never filled the pipeline, and
	// the first timed round of the relay came out below the later ones),
	// the client's connection, the task queue.
	warm := min(n, handoffWarmup)
	b.progress("handoff: warming both paths with %d starts each (untimed)", warm)
	if _, err := b.bareStarts(ctx, warm, inFlight); err != nil {
		return err
	}
	if err := seedOrders(ctx, pool, warm); err != nil {
		return err
	}
	if _, err := drain(ctx, pool, pub, warm, b.logger); err != nil {
		return err
	}

	var bareTime, relayTime time.Duration
	var bareN, relayN int
	// Off Linux (no /proc) a sample's error says so and the CPU figures
	// stay zero: the handoff figures are measured all the same.
	var meter benchcpu.Meter
	var bareCPU, relayCPU benchcpu.Usage
	var runRatios []float64
	var perRun []string
	runs, rounds := b.cfg.handoffRuns, b.cfg.handoffRounds
	for run := range runs {
		var runBare, runRelay time.Duration
		var perRound []string
		for round := range rounds {
			var roundBare, roundRelay float64
			relayFirst := round%2 == 1
			for i := range 2 {
				if (i == 0) != relayFirst { // bare
					b.progress("handoff run %d/%d, round %d/%d: bare ExecuteWorkflow loop, %d starts", run+1, runs, round+1, rounds, n)
					if err := b.settle(ctx, pool); err != nil {
						return err
					}
					before, _ := meter.Sample()
					d, err := b.bareStarts(ctx, n, inFlight)
					if err != nil {
						return err
					}
					after, _ := meter.Sample()
					bareCPU = bareCPU.Add(after.Sub(before))
					runBare += d
					roundBare = perSecond(n, d)
					b.progress("  %.0f starts/s", roundBare)
					continue
				}
				b.progress("handoff run %d/%d, round %d/%d: enqueueing %d orders, then the relay drains them", run+1, runs, round+1, rounds, n)
				if err := seedOrders(ctx, pool, n); err != nil {
					return err
				}
				if err := b.settle(ctx, pool); err != nil {
					return err
				}
				before, _ := meter.Sample()
				res, err := drain(ctx, pool, pub, n, b.logger)
				if err != nil {
					return err
				}
				after, _ := meter.Sample()
				relayCPU = relayCPU.Add(after.Sub(before))
				if res.publishErrors > 0 {
					b.progress("  warning: %d publish errors (retried with backoff); relay_per_s is pessimistic", res.publishErrors)
				}
				runRelay += res.elapsed
				roundRelay = perSecond(n, res.elapsed)
				b.progress("  %.0f events/s", roundRelay)
			}
			perRound = append(perRound, fmt.Sprintf("%.2f", benchstat.Ratio(roundRelay, roundBare)))
		}
		// A run's ratio is its rates over all its rounds, as one run of
		// the bench used to report it; the series' figure is their median.
		ratio := benchstat.Ratio(perSecond(n*rounds, runRelay), perSecond(n*rounds, runBare))
		runRatios = append(runRatios, ratio)
		perRun = append(perRun, fmt.Sprintf("%.2f (rounds %s)", ratio, strings.Join(perRound, ", ")))
		b.progress("handoff run %d/%d: ratio %.2f", run+1, runs, ratio)
		bareTime += runBare
		relayTime += runRelay
		bareN += n * rounds
		relayN += n * rounds
	}
	bare, relay := perSecond(bareN, bareTime), perSecond(relayN, relayTime)
	b.rep.add(metric{name: "bare_start_per_s", value: bare})
	b.rep.add(metric{name: "relay_per_s", value: relay})
	b.rep.add(metric{name: "handoff_ratio", value: benchstat.MedianOf(runRatios), decimals: 2, target: atLeast(handoffTarget(b.store))})
	b.rep.note("handoff: a series of %d run(s) of %d round(s); a round is %d workflow starts per side, alternating which side goes first; bare = "+
		"client.ExecuteWorkflow (the request temporalpub sends) from %d goroutines, the relay's MaxInFlight; relay = "+
		"outbox relay with default Config and the temporalpub publisher, from Run until every event is marked "+
		"published; both sides warmed first with %d untimed starts each; before either side's clock starts, the scratch database is vacuumed and checkpointed (%s), so the "+
		"seed's writes are not flushed in the relay's time; task queue without a worker. A run's ratio is its relay rate over its bare rate (total events / total time per side); "+
		"handoff_ratio is the median of the runs' ratios, since one run moves by about ±0.1 with the server's own cost. Runs: %s. Series: %s.",
		runs, rounds, n, inFlight, min(n, handoffWarmup), b.settledBy(), strings.Join(perRun, "; "), spread(runRatios))
	b.rep.add(metric{name: "bare_cpu_ms_per_start", value: bareCPU.MsPerEvent(bareN), decimals: 2})
	b.rep.add(metric{name: "relay_cpu_ms_per_event", value: relayCPU.MsPerEvent(relayN), decimals: 2})
	b.rep.note("handoff CPU (the whole machine's busy time per event over each side's timed phases, by process): bare %s; relay %s. Placement: %s.",
		bareCPU.PerEvent(bareN), relayCPU.PerEvent(relayN), backends.placement())
	return nil
}

// handoffWarmup is the most starts each side makes, untimed, before the
// first round.
const handoffWarmup = 500

// spread says how far the runs' ratios scatter: their median, range, mean
// and its standard error (the sample's standard deviation over the square
// root of the runs; --handoff-runs narrows it).
func spread(ratios []float64) string {
	if len(ratios) < 2 {
		return "one run: no spread; --handoff-runs 5 or more gives one"
	}
	mean, sem := benchstat.MeanSEM(ratios)
	return fmt.Sprintf("median %.3f, from %.2f to %.2f, mean %.3f, standard error %.3f over %d runs",
		benchstat.MedianOf(ratios), slices.Min(ratios), slices.Max(ratios), mean, sem, len(ratios))
}

// settle runs the seed's aftermath before a timed phase: VACUUM (ANALYZE)
// of the scratch database and a CHECKPOINT, which flushes the seed's dirty
// pages. The relay's side has just placed n orders; without this their
// autovacuum and page writes would land in the relay's time, sharing the
// disk and the cores with the Temporal server, while the bare side has
// nothing to flush. The relay's own writes (claims, marks, their dead
// tuples) stay in its time. Both sides settle, so each starts from a quiet
// database. A role that may not CHECKPOINT only vacuums (settledBy says
// which ran).
func (b *bench) settle(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := qVacuumScratch.Exec(ctx, pool, namedsql.NoArgs{}); err != nil {
		return fmt.Errorf("settle the scratch database: %w", err)
	}
	if b.noCheckpoint {
		return nil
	}
	if _, err := qCheckpoint.Exec(ctx, pool, namedsql.NoArgs{}); err != nil {
		b.progress("  no CHECKPOINT (%v): the seed's pages may be flushed in the timed phase", err)
		b.noCheckpoint = true
	}
	return nil
}

// settledBy says what settle ran, for the report's note.
func (b *bench) settledBy() string {
	if b.noCheckpoint {
		return "VACUUM (ANALYZE) only: the role may not CHECKPOINT"
	}
	return "VACUUM (ANALYZE) and CHECKPOINT"
}

// handoffTarget is the least handoff_ratio the relay must reach on a
// Temporal server of this persistence store: 0.97 on the dev server
// (SQLite), 0.95 on anything else, such as the two-node cluster on
// PostgreSQL (docs/performance.md).
func handoffTarget(store string) float64 {
	if store == "sqlite" {
		return 0.97
	}
	return 0.95
}

// relayDefaults is outbox.RelayConfig with the relay's defaults applied, as
// outbox.NewRelay applies them (it connects nothing).
func relayDefaults(pool *pgxpool.Pool) (outbox.RelayConfig, error) {
	r, err := outbox.NewRelay(pool, outbox.PublisherFunc(noopPublish), outbox.RelayConfig{})
	if err != nil {
		return outbox.RelayConfig{}, err
	}
	return r.Config(), nil
}

// noopPublish acknowledges every event at once.
func noopPublish(context.Context, outbox.Event) error { return nil }

// seedOrders places n orders through orders.CreateOrder (an order row and
// its OrderCreated event each) from a few concurrent producers.
func seedOrders(ctx context.Context, pool *pgxpool.Pool, n int) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	p := benchdb.Order()
	for range 4 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := orders.CreateOrder(ctx, pool, p); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("seed orders: %w", err)
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// backendPlacement puts the PostgreSQL backends of the handoff's pool on
// the bench's CPUs (benchcpu.FollowMe) as they connect, so that a bench
// placed apart from the Temporal server (taskset) has the relay's database
// work apart too; it remembers what it could not place.
type backendPlacement struct {
	mu       sync.Mutex
	placed   int
	unplaced int
	err      error
}

// follow is the pool's configuration: every new connection's backend
// follows the bench. A backend that cannot be placed (PostgreSQL on
// another machine, or another user's) is only counted. A hook cfg had
// runs first.
func (p *backendPlacement) follow(cfg *pgxpool.Config) {
	before := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if before != nil {
			if err := before(ctx, c); err != nil {
				return err
			}
		}
		pid, err := qBackendPID.Value(ctx, c, namedsql.NoArgs{})
		if err == nil {
			err = benchcpu.FollowMe(pid)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			p.unplaced++
			p.err = err
			return nil
		}
		p.placed++
		return nil
	}
}

// placement is benchcpu.Placement with where the pool's backends run.
func (p *backendPlacement) placement() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := benchcpu.Placement()
	switch {
	case p.unplaced > 0:
		return fmt.Sprintf("%s; %d of the relay's PostgreSQL backends run where the kernel puts them (%v)", s, p.unplaced, p.err)
	case p.placed > 0:
		return fmt.Sprintf("%s; the relay's %d PostgreSQL backend(s) on the bench's CPUs", s, p.placed)
	}
	return s
}
