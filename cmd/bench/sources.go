package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/internal/bench/benchstat"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/pgcluster"
)

// sourceEnv selects the relay sources the sources phase measures: unset
// measures poll, cdc and log side by side; poll, cdc or log measures that
// one alone.
const sourceEnv = "OUTFLOW_RELAY_SOURCE"

// benchSlot is the cdc relay's slot in the scratch databases (dropped with
// them).
const benchSlot = "outflow_bench"

// logEnqueuer writes the log source's events (outbox_log).
var logEnqueuer = outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true})

// measureSources measures the three relay sources side by side in one run, on
// one wal_level=logical server: the server of DATABASE_URL when it has
// wal_level=logical, else a throwaway cluster this phase starts (and says
// so). For each source: handoff latency (commit to Temporal's accept, orders
// trickled as in the latency phase), throughput with the no-op publisher,
// and what the database pays per event: WAL beyond the insert, row versions
// made dead, statements.
func (b *bench) measureSources(ctx context.Context) error {
	sources := []string{"poll", "cdc", "log"}
	switch s := strings.TrimSpace(os.Getenv(sourceEnv)); s {
	case "":
	case "poll", "cdc", "log":
		sources = []string{s}
	default:
		return fmt.Errorf("%s=%q: want poll, cdc or log (unset: all three side by side)", sourceEnv, s)
	}
	srv, cleanup, err := b.logicalServer(ctx)
	if err != nil {
		return err
	}
	defer cleanup()

	insert, err := b.insertWAL(ctx, srv)
	if err != nil {
		return err
	}
	b.rep.add(metric{name: "insert_wal_bytes_per_event", value: insert, decimals: 0})
	// Latency is the figure a busy shared machine disturbs most: the sources
	// take turns in ABBA order over two rounds, each round beside its own
	// bare-start sample, and the samples are pooled.
	handoffs := map[string][]time.Duration{}
	var bare []time.Duration
	for round := range 2 {
		order := slices.Clone(sources)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		ds, err := b.bareLatencies(ctx)
		if err != nil {
			return err
		}
		bare = append(bare, ds...)
		for _, source := range order {
			handoff, total, warm, err := b.sourceHandoffs(ctx, srv, source)
			if err != nil {
				return fmt.Errorf("%s handoff: %w", source, err)
			}
			handoffs[source] = append(handoffs[source], handoff...)
			b.progress("  %s round %d: p50 %.1f ms over %d orders", source, round+1, benchstat.Ms(benchstat.Percentile(handoff, 50)), total-warm)
		}
	}
	beyond := map[string]float64{}
	for _, source := range sources {
		handoff := handoffs[source]
		b.rep.add(metric{name: source + "_handoff_latency_p50_ms", value: benchstat.Ms(benchstat.Percentile(handoff, 50)), decimals: 1})
		b.rep.add(metric{name: source + "_handoff_latency_p99_ms", value: benchstat.Ms(benchstat.Percentile(handoff, 99)), decimals: 1})
		cost, err := b.sourceCost(ctx, srv, source)
		if err != nil {
			return fmt.Errorf("%s cost: %w", source, err)
		}
		b.rep.add(metric{name: source + "_relay_per_s", value: cost.perSecond, decimals: 0})
		b.rep.add(metric{name: source + "_wal_bytes_per_event", value: cost.walPerEvent, decimals: 0})
		b.rep.add(metric{name: source + "_dead_tuples_per_event", value: cost.deadPerEvent, decimals: 2})
		b.rep.add(metric{name: source + "_statements_per_event", value: cost.statementsPerEvent, decimals: 2})
		beyond[source] = cost.walPerEvent - insert
	}
	b.rep.add(metric{name: "sources_bare_start_latency_p50_ms", value: benchstat.Ms(benchstat.Percentile(bare, 50)), decimals: 1})
	b.rep.note("sources handoff: per source, 2 runs of %d orders at %d/s (after a second of warm-up each), poll, cdc and log in "+
		"ABC CBA order (the log's orders written by EnqueueConfig{Log: true}), each from the return of its COMMIT to the return of the publisher's ExecuteWorkflow; "+
		"sources_bare_start_latency_p50_ms pools %d sequential bare starts taken before each round.",
		int(b.cfg.latencyDuration.Seconds()*float64(b.cfg.latencyRate)), b.cfg.latencyRate, len(bare))
	if cdc, ok := b.rep.value("cdc_handoff_latency_p50_ms"); ok {
		b.rep.add(metric{name: "cdc_handoff_p50_over_bare_ms", value: cdc - benchstat.Ms(benchstat.Percentile(bare, 50)), decimals: 1, target: atMost(1)})
	}
	if slices.Contains(sources, "poll") && slices.Contains(sources, "cdc") {
		b.rep.add(metric{name: "cdc_wal_beyond_insert_ratio", value: benchstat.Ratio(beyond["cdc"], beyond["poll"]), decimals: 2, target: atMost(1.1)})
	}
	b.rep.note("sources: %d events per source seeded in one transaction (SeedPending, %d per aggregate) while the relay "+
		"runs, with a publisher that acknowledges at once; relay_per_s from that commit to the last event marked "+
		"published (cdc: and the slot confirmed past it). wal_bytes_per_event = pg_current_wal_lsn() from before the seed to "+
		"then, per event, the insert included (insert_wal_bytes_per_event: the seed alone, no relay running; "+
		"cdc_wal_beyond_insert_ratio = (cdc - insert) / (poll - insert)). dead_tuples_per_event = row versions the relay "+
		"made dead (n_tup_upd + n_tup_del of outbox_events in pg_stat_user_tables, after the relay's backends exited). "+
		"statements_per_event = statements the relay's pool sent (pgx tracer, batches counted per statement; the cdc "+
		"replication stream's messages are not statements). log: the same events written to outbox_log in one "+
		"transaction (SeedLog), done when no event is after its partition's cursor nor under a hold; its wal_bytes_per_event "+
		"includes its own insert into outbox_log, not SeedPending's; dead_tuples_per_event counts outbox_log_cursors, "+
		"outbox_log_holds, outbox_log_relays and the log itself. All sources run on the same wal_level=logical server.",
		b.cfg.noopEvents/5, b.cfg.noopPerAggregate)
	return nil
}

// logicalServer returns a server with wal_level=logical for the sources
// phase: the bench's own when it has it, else a throwaway cluster.
func (b *bench) logicalServer(ctx context.Context) (*server, func(), error) {
	url, level, done, err := pgcluster.LogicalOr(ctx, b.srv.Base.ConnString())
	if err != nil {
		return nil, nil, err
	}
	if level == "logical" {
		return b.srv, done, nil
	}
	b.progress("sources: the server of DATABASE_URL runs wal_level=%s, and the cdc source needs wal_level=logical: "+
		"both sources run on a throwaway wal_level=logical cluster", level)
	b.rep.note("sources: DATABASE_URL's server has wal_level=%s, so both sources ran on a throwaway local cluster "+
		"(initdb, wal_level=logical, fsync=off).", level)
	srv, err := newServer(ctx, url)
	if err != nil {
		done()
		return nil, nil, err
	}
	srv.run = b.srv.run
	return srv, func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Close(cctx)
		done()
	}, nil
}

// startSource runs a relay of source over pool until the returned stop; a
// cdc relay is running once its stream is up.
func (b *bench) startSource(ctx context.Context, source string, pool *pgxpool.Pool, pub outbox.Publisher) (func(), error) {
	relay, err := outbox.NewRelay(pool, pub, outbox.RelayConfig{Logger: b.logger, Source: source, CDCSlot: benchSlot})
	if err != nil {
		return nil, err
	}
	if source != "cdc" {
		return runInBackground(ctx, relay.Run), nil
	}
	stop := runInBackground(ctx, relay.Run)
	deadline := time.Now().Add(time.Minute)
	for {
		slot, _, err := outboxops.Slot(ctx, pool, benchSlot)
		if err == nil && slot.Active {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			stop()
			return nil, fmt.Errorf("the cdc relay did not start streaming within a minute (last error: %v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return func() {
		stop()
		dropSlot(ctx, pool)
	}, nil
}

// dropSlot drops the bench's slot once its walsender has gone, so that the
// scratch database can be dropped.
func dropSlot(ctx context.Context, pool *pgxpool.Pool) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := qDropSlot.Exec(ctx, pool, slotArgs{Slot: benchSlot}); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *bench) sourceHandoffs(ctx context.Context, srv *server, source string) ([]time.Duration, int, int, error) {
	name, dbcfg, err := srv.scratch(ctx, source+"_latency")
	if err != nil {
		return nil, 0, 0, err
	}
	defer srv.Drop(context.WithoutCancel(ctx), name) //nolint:errcheck // close drops leftovers
	b.progress("sources: %s relay handoff latency", source)
	var enq *outbox.Enqueuer
	if source == "log" {
		enq = logEnqueuer
	}
	return b.trickleHandoffs(ctx, dbcfg, enq, func(ctx context.Context, pool *pgxpool.Pool, pub outbox.Publisher) (func(), error) {
		return b.startSource(ctx, source, pool, pub)
	})
}

// insertWAL is the WAL one seeded event writes with no relay running.
func (b *bench) insertWAL(ctx context.Context, srv *server) (float64, error) {
	pool, done, err := srv.scratchPool(ctx, "insert_wal")
	if err != nil {
		return 0, err
	}
	defer done()
	n := b.cfg.noopEvents / 5
	before, err := walLSN(ctx, pool)
	if err != nil {
		return 0, err
	}
	if _, err := qSeedPending.Exec(ctx, pool, seedArgs{Events: n, Aggregates: n / b.cfg.noopPerAggregate}); err != nil {
		return 0, err
	}
	after, err := walLSN(ctx, pool)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(n), nil
}

type sourceCost struct {
	perSecond, walPerEvent, deadPerEvent, statementsPerEvent float64
}

// sourceCost seeds events in one transaction while a relay of source with a
// no-op publisher runs, and measures what it took to see them published.
func (b *bench) sourceCost(ctx context.Context, srv *server, source string) (sourceCost, error) {
	var c sourceCost
	n := b.cfg.noopEvents / 5
	name, dbcfg, err := srv.scratch(ctx, source+"_cost")
	if err != nil {
		return c, err
	}
	defer srv.Drop(context.WithoutCancel(ctx), name) //nolint:errcheck // close drops leftovers
	admin, err := openPool(ctx, dbcfg)
	if err != nil {
		return c, err
	}
	defer admin.Close()
	var sent atomic.Int64
	cfg := dbcfg.Copy()
	cfg.ConnConfig.Tracer = countingTracer{n: &sent}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return c, err
	}
	defer pool.Close()
	stop, err := b.startSource(ctx, source, pool, outbox.PublisherFunc(noopPublish))
	if err != nil {
		return c, err
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	before, err := walLSN(ctx, admin)
	if err != nil {
		return c, err
	}
	tup0, err := settledTupleChanges(ctx, admin, source)
	if err != nil {
		return c, err
	}
	sent0 := sent.Load()
	b.progress("sources: %s relay, %d events seeded in one transaction while it runs (no-op publisher)", source, n)
	seed, notify, pending := qSeedPending, qNotify, qCountPending
	if source == "log" {
		seed, notify, pending = qSeedLog, qNotifyLog, qCountLogPending
	}
	if _, err := seed.Exec(ctx, admin, seedArgs{Events: n, Aggregates: n / b.cfg.noopPerAggregate}); err != nil {
		return c, err
	}
	start := time.Now()
	if _, err := notify.Exec(ctx, admin, namedsql.NoArgs{}); err != nil { // the seed is not Enqueue: wake the relay
		return c, err
	}
	for {
		left, err := pending.Value(ctx, admin, namedsql.NoArgs{})
		if err != nil {
			return c, err
		}
		if left == 0 {
			break
		}
		if time.Since(start) > 5*time.Minute {
			return c, fmt.Errorf("%d events still pending after 5 minutes", left)
		}
		time.Sleep(2 * time.Millisecond)
	}
	elapsed := time.Since(start)
	end, err := walLSN(ctx, admin)
	if err != nil {
		return c, err
	}
	if source == "cdc" { // settled means confirmed too: wait for the slot to pass the marks
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if passed, err := qSlotPassed.Value(ctx, admin, slotPassedArgs{Slot: benchSlot, LSN: end.String()}); err == nil && passed {
				break
			}
		}
	}
	statements := sent.Load() - sent0
	stop()
	stopped = true
	pool.Close() // the relay's backends exit and flush their statistics
	tup1, err := settledTupleChanges(ctx, admin, source)
	if err != nil {
		return c, err
	}
	c.perSecond = perSecond(n, elapsed)
	c.walPerEvent = float64(end-before) / float64(n)
	c.deadPerEvent = float64(tup1-tup0) / float64(n)
	c.statementsPerEvent = float64(statements) / float64(n)
	b.progress("  %.0f events/s, %.0f WAL bytes, %.2f dead row versions, %.2f statements per event",
		c.perSecond, c.walPerEvent, c.deadPerEvent, c.statementsPerEvent)
	return c, nil
}

func walLSN(ctx context.Context, db *pgxpool.Pool) (pglogrepl.LSN, error) {
	s, err := qCurrentWAL.Value(ctx, db, namedsql.NoArgs{})
	if err != nil {
		return 0, err
	}
	return pglogrepl.ParseLSN(s)
}

// settledTupleChanges reads n_tup_upd + n_tup_del of the tables source
// writes (outbox_events; the log's for log) once the statistics have
// settled.
func settledTupleChanges(ctx context.Context, db *pgxpool.Pool, source string) (int64, error) {
	q := qOutboxTupleChanges
	if source == "log" {
		q = qLogTupleChanges
	}
	return settled(ctx, func() (int64, error) {
		var n int64
		// A transaction of its own each time: a backend keeps what it read
		// of the statistics until its transaction ends.
		err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			var err error
			n, err = q.Value(ctx, tx, namedsql.NoArgs{})
			return err
		})
		return n, err
	})
}
