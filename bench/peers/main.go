// Command peers runs outflow's relay (its poll, cdc and log sources) and
// its peers, River, Watermill and DBOS, through the same job on the same
// PostgreSQL in one run, and prints their figures side by side:
//
//	make bench-peers                     # at the repository root
//	go run . -events 2000 -rounds 1      # in bench/peers: a smoke run
//
// Every contender, in every round (the contenders' order alternates between
// rounds), gets a fresh database peers_<contender>_<pid>_r<round> on the
// server of DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres)
// with outflow's orders table and its own schema, and runs:
//
//  1. write: order-only transactions against order + enqueue, interleaved;
//  2. drain: a backlog of -events events over -orders orders, enqueued
//     through the contender's own API, delivered to a no-op sink, once as
//     the contender is configured by default and once as configured for
//     throughput, counting events that reach the sink out of their order's
//     sequence; the throughput drain also counts the statements the consumer
//     sent, the server's WAL and the dead row versions it made;
//  3. handoff: orders placed at -rate per second, commit to sink;
//  4. overlap: -overlap-orders orders, each written by two transactions of
//     which the one holding the earlier xid writes the later sequence,
//     counting deliveries out of their order's sequence;
//  5. held horizon (-held-horizon, -held-rate): orders arriving while another
//     session holds a transaction with an xid open, in a database of its own;
//  6. crash (-crash, -crash-events): a backlog drained while PostgreSQL
//     is restarted (fast shutdown, on a throwaway cluster), and again while
//     the consumer's process is killed and started again;
//  7. with -jetstream, the drain, the handoff and the overlap again with a
//     sink that publishes each event to a NATS JetStream stream as the
//     starter's jetstream sink does (outbox/natspub, the PubAck the
//     acknowledgement), Watermill with its own forwarder and watermill-nats'
//     publisher instead, a consumer of the stream checking each order's
//     sequence;
//  8. with -temporal, the drain and the handoff again with a sink that starts
//     a workflow per event on a Temporal dev server started from bin/temporal.
//
// It is a module of its own so that River, Watermill and DBOS never enter
// outflow's go.mod. Progress goes to stderr; stdout gets "name: value" lines,
// a Markdown table and notes. See docs/performance.md, "A no-op sink: the database's side".
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/outflow/outflow/internal/bench/benchcmd"
	"github.com/outflow/outflow/internal/bench/benchcpu"
	"github.com/outflow/outflow/internal/bench/benchstat"
	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/outbox/outboxtest/dev/pgcluster"
)

// quietLogger takes the contenders' own logs: warnings and errors only.
var quietLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

func main() {
	consumerChild() // the crash round's consumer, in a process of its own
	benchcmd.Main("peers", parseFlags, run)
}

// bench is what every phase shares.
type bench struct {
	cfg      config
	srv      *server
	temporal *temporal
	// effects runs the effect round's workflow, nil without -temporal.
	effects *effectWorker
	// jetstream is the -jetstream phase's stream, nil without it.
	jetstream *jetstreamBench
	res       *results
	stderr    io.Writer
	start     time.Time
	// crash is the crash round's throwaway cluster, started by its first
	// round.
	crash *crashCluster
	// throwaway says why the contenders run on a throwaway cluster, if so.
	throwaway string
}

// serverURL is DATABASE_URL, unless outflow_cdc runs and that server lacks
// wal_level=logical: then every contender runs on one throwaway
// wal_level=logical cluster (initdb, fsync=off), so all of them still share
// one server.
func (b *bench) serverURL(ctx context.Context, cs []Contender) (string, func(), error) {
	url := database.URL()
	cdc := slices.ContainsFunc(cs, func(c Contender) bool { return c.Name() == (outflowCDC{}).Name() })
	if !cdc {
		return url, func() {}, nil
	}
	b.progress("outflow_cdc needs wal_level=logical; checking DATABASE_URL's server (-contenders without outflow_cdc keeps it)")
	logicalURL, level, done, err := pgcluster.LogicalOr(ctx, url)
	if err != nil {
		return "", nil, err
	}
	if logicalURL != url {
		b.throwaway = fmt.Sprintf("DATABASE_URL's server has wal_level=%s and outflow_cdc needs logical, so every contender "+
			"ran on one throwaway cluster (initdb, wal_level=logical, fsync=off)", level)
		b.progress("%s", b.throwaway)
	}
	return logicalURL, done, nil
}

func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(b.stderr, "[%6.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	b := &bench{cfg: cfg, res: newResults(), stderr: stderr, start: time.Now()}
	if cfg.cpuProfile != "" {
		stop, err := benchcmd.StartCPUProfile(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	url, stopCluster, err := b.serverURL(ctx, cfg.selected())
	if err != nil {
		return err
	}
	defer stopCluster()
	srv, err := newServer(ctx, url)
	if err != nil {
		return err
	}
	b.srv = srv
	defer srv.Shutdown(func(err error) { b.progress("warning: %v; drop it by hand", err) })
	version, err := srv.Version(ctx)
	if err != nil {
		return err
	}
	if cfg.temporal {
		b.progress("starting a Temporal dev server (in memory) from the repository's Temporal CLI")
		t, err := startTemporal(ctx)
		if err != nil {
			return fmt.Errorf("%w (or run with -temporal=false)", err)
		}
		b.temporal = t
		defer func() {
			if err := t.stop(); err != nil {
				b.progress("warning: %v", err)
			}
		}()
		if b.effects, err = t.startEffects(); err != nil {
			return err
		}
		defer b.effects.w.Stop()
	}
	if cfg.jetstream {
		j, err := startJetStream(ctx)
		if err != nil {
			return fmt.Errorf("%w (or run with -jetstream=false)", err)
		}
		b.jetstream = j
		defer func() {
			if err := j.stop(context.WithoutCancel(ctx)); err != nil {
				b.progress("warning: %v", err)
			}
		}()
	}
	defer func() {
		if b.crash != nil {
			b.crash.close(func(err error) { b.progress("warning: %v", err) })
		}
	}()
	cs := cfg.selected()
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name()
	}
	fmt.Fprintf(stdout, "# outflow peers bench: %s %s/%s, %d CPUs (%s), PostgreSQL %s, %d round(s), N=%d events over M=%d orders, handoff at %d/s for %s\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), benchcpu.Machine(), version, cfg.rounds, cfg.events, cfg.orders, cfg.rate, cfg.duration)
	fmt.Fprintf(stdout, "# peers: %s\n", peerVersions())
	if b.temporal != nil {
		names = append(names, bareStart)
	}
	for r := range cfg.rounds {
		for _, c := range roundOrder(cs, r) {
			if err := b.round(ctx, c, r); err != nil {
				return fmt.Errorf("%s, round %d: %w", c.Name(), r+1, err)
			}
		}
		if b.temporal != nil {
			if err := b.bareRound(ctx, r); err != nil {
				return fmt.Errorf("%s, round %d: %w", bareStart, r+1, err)
			}
		}
	}
	b.notes(cs)
	b.res.write(stdout, names)
	b.progress("done in %s", time.Since(b.start).Round(time.Second))
	return nil
}

// round runs every phase for one contender in a fresh database.
func (b *bench) round(ctx context.Context, c Contender, r int) error {
	name, dbcfg, err := b.srv.scratch(ctx, c, r)
	if err != nil {
		return err
	}
	defer b.srv.Drop(context.WithoutCancel(ctx), name) //nolint:errcheck // close drops leftovers
	n, m := b.cfg.events, b.cfg.orders
	layout := uint64(r + 1)
	if b.cfg.roundRobin {
		layout = 0
	}

	b.progress("round %d %s: write path, %d pairs", r+1, c.Name(), b.cfg.writePairs)
	w, err := write(ctx, c, dbcfg, b.cfg.writePairs)
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	b.res.add(c.Name(), "write_order_only_ms", benchstat.Ms(w.orderOnly))
	b.res.add(c.Name(), "write_with_event_ms", benchstat.Ms(w.withEvent))
	b.res.add(c.Name(), "write_ratio", benchstat.Ratio(float64(w.withEvent), float64(w.orderOnly)))

	for _, p := range []Profile{Default, Tuned} {
		b.progress("round %d %s: drain %d events over %d orders, %s settings", r+1, c.Name(), n, m, p)
		d, err := b.drain(ctx, c, dbcfg, p, n, m, layout, nil)
		if err != nil {
			return fmt.Errorf("drain (%s): %w", p, err)
		}
		rate := float64(n) / d.elapsed.Seconds()
		b.progress("  %.0f events/s, %d out of order, %d duplicates", rate, d.tally.outOfOrder, d.tally.deliveries-d.tally.distinct)
		b.res.add(c.Name(), "duplicates", float64(d.tally.deliveries-d.tally.distinct))
		if p == Default {
			b.res.add(c.Name(), "default_drain_events_per_s", rate)
			b.res.add(c.Name(), "default_out_of_order", float64(d.tally.outOfOrder))
			continue
		}
		b.res.add(c.Name(), "drain_events_per_s", rate)
		b.res.add(c.Name(), "out_of_order", float64(d.tally.outOfOrder))
		b.res.add(c.Name(), "statements_per_event", float64(d.statements)/float64(n))
		b.res.add(c.Name(), "wal_bytes_per_event", float64(d.walBytes)/float64(n))
		b.res.add(c.Name(), "dead_tuples_per_event", float64(d.deadTuples)/float64(n))
		b.res.add(c.Name(), "enqueue_wal_bytes_per_event", float64(d.enqueueWALBytes)/float64(n))
		b.res.add(c.Name(), "enqueue_dead_tuples_per_event", float64(d.enqueueDeadTuples)/float64(n))
	}

	for _, p := range []Profile{Tuned, Default} {
		b.progress("round %d %s: handoff at %d orders/s for %s, %s settings", r+1, c.Name(), b.cfg.rate, b.cfg.duration, p)
		lat, err := b.handoff(ctx, c, dbcfg, p, b.cfg.rate, b.cfg.duration, nil)
		if err != nil {
			return fmt.Errorf("handoff (%s): %w", p, err)
		}
		b.progress("  p50 %.1f ms, p99 %.1f ms", benchstat.Ms(benchstat.Percentile(lat, 50)), benchstat.Ms(benchstat.Percentile(lat, 99)))
		samples := "handoff"
		if p == Default {
			samples = "default_handoff"
		}
		b.res.addSamples(c.Name(), samples, lat)
	}

	b.progress("round %d %s: overlapping transactions on %d orders, tuned settings", r+1, c.Name(), b.cfg.overlapOrders)
	ov, err := b.overlap(ctx, c, dbcfg, b.cfg.overlapOrders, nil)
	if err != nil {
		return fmt.Errorf("overlap: %w", err)
	}
	b.progress("  %d out of order, %d duplicates", ov.outOfOrder, ov.deliveries-ov.distinct)
	b.res.add(c.Name(), "overlap_out_of_order", float64(ov.outOfOrder))

	if b.cfg.heldHorizon > 0 {
		if _, err := b.heldRound(ctx, c, r); err != nil {
			return err
		}
	}

	if b.cfg.crash {
		if err := b.crashRound(ctx, c, r, layout); err != nil {
			return err
		}
	}

	if b.jetstream != nil {
		if err := b.jetstreamRound(ctx, c, dbcfg, r, layout); err != nil {
			return err
		}
	}
	if b.temporal == nil {
		return nil
	}
	tn := b.cfg.temporalEvents
	b.progress("round %d %s: drain %d events into Temporal (a workflow start each), tuned settings", r+1, c.Name(), tn)
	d, err := b.drain(ctx, c, dbcfg, Tuned, tn, max(1, tn/(n/m)), layout, b.temporal.sink)
	if err != nil {
		return fmt.Errorf("temporal drain: %w", err)
	}
	b.progress("  %.0f events/s", float64(tn)/d.elapsed.Seconds())
	b.res.add(c.Name(), "temporal_events_per_s", float64(tn)/d.elapsed.Seconds())
	b.progress("round %d %s: handoff into Temporal at %d orders/s for %s", r+1, c.Name(), b.cfg.temporalRate, b.cfg.temporalDuration)
	lat, err := b.handoff(ctx, c, dbcfg, Tuned, b.cfg.temporalRate, b.cfg.temporalDuration, b.temporal.sink)
	if err != nil {
		return fmt.Errorf("temporal handoff: %w", err)
	}
	b.progress("  p50 %.1f ms, p99 %.1f ms", benchstat.Ms(benchstat.Percentile(lat, 50)), benchstat.Ms(benchstat.Percentile(lat, 99)))
	b.res.addSamples(c.Name(), "temporal_handoff", lat)
	return b.effectRound(ctx, c, dbcfg, layout)
}

// peerModules are the peers' modules whose versions the header names.
var peerModules = []string{
	"github.com/riverqueue/river",
	"github.com/ThreeDotsLabs/watermill",
	"github.com/ThreeDotsLabs/watermill-sql/v4",
	dbosModule,
}

// peerVersions is "module version, ..." of peerModules, as built.
func peerVersions() string {
	out := make([]string, len(peerModules))
	for i, m := range peerModules {
		out[i] = m + " " + moduleVersion(m)
	}
	return strings.Join(out, ", ")
}

// moduleVersion is the version of module path this binary was built with.
func moduleVersion(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == path {
				return dep.Version
			}
		}
	}
	return "(unknown version)"
}

// notes says how each contender was configured and how figures were taken.
func (b *bench) notes(cs []Contender) {
	for _, c := range cs {
		b.res.note("%s default: %s", c.Name(), c.Settings(Default))
		b.res.note("%s tuned: %s", c.Name(), c.Settings(Tuned))
	}
	if b.throwaway != "" {
		b.res.note("server: %s", b.throwaway)
	}
	b.res.note("write: %d pairs per round of an order-only transaction (orders.SQL(\"InsertOrder\")) and the same order plus "+
		"the contender's enqueue of its event in one transaction, in random order; medians, wall time BEGIN to COMMIT.", b.cfg.writePairs)
	layout := "interleaved at random (the same layout for every contender of a round)"
	if b.cfg.roundRobin {
		layout = "round robin (every order's first event, then every order's second, ...)"
	}
	b.res.note("drain: %d events over %d orders (%d each), %s, each order's in sequence, enqueued through each "+
		"contender's API %d to a transaction, then ANALYZE (untimed), "+
		"from Start until the sink has every event; rates are medians of rounds. out_of_order counts deliveries whose "+
		"sequence is below one already delivered for the same order, summed over rounds; duplicates are deliveries "+
		"beyond the first of an event (both drains).", b.cfg.events, b.cfg.orders, b.cfg.events/b.cfg.orders, layout, seedChunk)
	b.res.note("cost (tuned drain): statements = every statement the consumer's pool sent (BEGIN/COMMIT, batch entries and COPY "+
		"included) per event; WAL = pg_current_wal_lsn() delta from Start to the consumer's stop, server-wide, so other "+
		"sessions on a shared server add to it; dead tuples = n_tup_upd + n_tup_del of the contender's database over "+
		"the same window, read after its backends exited. enqueue_* are the same two figures over the seeding of "+
		"the backlog (%d events to a transaction, so per-transaction costs are spread thin).", seedChunk)
	b.res.note("overlap: %d orders per round, each two transactions on the order where the later sequence is written by the "+
		"transaction holding the earlier xid (A takes its xid with pg_current_xact_id(); B begins after it, enqueues sequence 1 "+
		"and commits; then A enqueues sequence 2 and commits; B's xid checked above A's), written one order after another "+
		"through the contender's API while it runs with the tuned settings; overlap_out_of_order counts the deliveries "+
		"whose sequence is below one already delivered for the same order, summed over rounds.", b.cfg.overlapOrders)
	if b.cfg.heldHorizon > 0 {
		b.res.note("held_horizon: %d orders/s (tuned settings, no-op sink) into a database of its own; after 1 s another session "+
			"begins, takes an xid (pg_current_xact_id()) and idles %s, then rolls back; orders keep arriving until every order "+
			"committed by the release is delivered (recovery_s, from the release). stall_s is the longest gap between deliveries "+
			"during the hold (its start and end count as deliveries); p99_ms is commit to delivery of the orders committed from "+
			"the hold's start to recovery; dead_tuples (n_dead_tup) and table_bytes (pg_total_relation_size) are the contender's "+
			"queue tables' once its backends exited; every committed order must be delivered or the run fails.", b.cfg.heldRate, b.cfg.heldHorizon)
	}
	if b.cfg.crash {
		n, m := b.crashSize()
		b.res.note("crash: a backlog of %d events over %d orders per round in a database of its own, tuned settings, no-op sink, "+
			"each crash once %d were delivered. restart: the consumer in this process, on a throwaway cluster (initdb, wal_level=logical, "+
			"fsync=off) restarted with pg_ctl -m fast -w restart (every connection cut); kill: the consumer alone in a child process "+
			"(this binary again, its sink writing each delivery to its log before returning), killed with SIGKILL and a new one started "+
			"at once, on DATABASE_URL's server. first_delivery_s is from the crash's end (the restarted postmaster's start, "+
			"pg_postmaster_start_time(); the killed consumer reaped) to the first delivery after it, median of rounds (n/a: none came); "+
			"lost counts the backlog's events undelivered %s after the crash's end, or once the contender had nothing pending and "+
			"delivered nothing for %s; duplicates are deliveries beyond an event's first; out_of_order counts events whose first "+
			"delivery came after a later event of their order (a redelivered batch counts as duplicates, not here); the last three "+
			"summed over rounds. Why outflow waits after a kill: each source leases what it holds (claimed rows; the log's "+
			"partitions) for RelayConfig.Lease, 30 s by default, and a successor may take them only once the lease ran out, "+
			"since a relay that looks dead may still be publishing; a SIGTERM releases them at once, and a shorter Lease "+
			"(OUTFLOW_RELAY_LEASE, at least the publish timeout's double) shortens the wait for more renewals. Why the log "+
			"source redelivers after a restart: it advances a partition's position after the batch it read was delivered, "+
			"so a cut connection sends it back to the last advanced position; the duplicates are what at-least-once allows, "+
			"and a consumer drops them by event id (outbox/inbox).", n, m, n/crashFraction, crashTimeout, crashQuiet)
	}
	b.res.note("handoff: %d orders/s for %s after 1 s of warm-up, each an order and its event in one transaction; from the "+
		"return of COMMIT to the sink's call, percentiles of all rounds' samples.", b.cfg.rate, b.cfg.duration)
	if b.jetstream != nil {
		b.res.note("jetstream: stream %s (file storage, 2-minute duplicate window) on the NATS server of %s; outflow's, River's and DBOS's "+
			"handlers call outflow's natspub.Publisher (subject <prefix>.order.<order id>, Nats-Msg-Id = event id, returns on the "+
			"PubAck); Watermill runs its forwarder (watermill/components/forwarder: the forwarder's envelopes written by watermill-sql's "+
			"publisher in the order's transaction, read by its subscriber with the tuned settings, republished by watermill-nats/v2's "+
			"JetStream publisher with TrackMsgId: the same subjects, natspub's headers, Nats-Msg-Id = event id, returns on the PubAck); "+
			"drain of %d events, handoff (commit to PubAck) at %d/s for %s, the overlapping-transactions round on %d orders, "+
			"tuned settings. jetstream_out_of_order and jetstream_stored_twice are what an ordered consumer of the stream read "+
			"back: an order's events out of their sequence (drain and handoff), and a message stored twice (a redelivery "+
			"outside the duplicate window; all three), summed over rounds; jetstream_overlap_out_of_order is the first over "+
			"the overlapping-transactions round.",
			b.jetstream.stream, natsURLEnv, b.cfg.jetstreamEvents, b.cfg.jetstreamRate, b.cfg.duration, b.cfg.overlapOrders)
	}
	if b.temporal != nil {
		b.res.note("temporal: a dev server in memory from bin/temporal, a task queue without a worker; every contender's "+
			"handler calls outflow's temporalpub.Publisher (ExecuteWorkflow, workflow ID = event id); drain of %d events, "+
			"handoff at %d/s for %s, tuned settings.", b.cfg.temporalEvents, b.cfg.temporalRate, b.cfg.temporalDuration)
		b.res.note("effect_started: from the COMMIT to the first step of the effect running: a drain of %d events "+
			"(effect_started_per_s, saturation) and orders at %d/s for %s (p50, p99); for outflow, River and Watermill a "+
			"Temporal workflow's first activity (a worker of the same dev server, in the bench process), for DBOS its own "+
			"workflow's step (DBOS runs the workflow in the consumer's process). %s: the same workflow started by the "+
			"goroutine that committed an order-only transaction (no outbox), 16 at once for the rate; "+
			"effect_started_p99_vs_bare is a contender's p99 over its. effect_cpu_*_cores: cores busy from the contender's start until the sink had every event "+
			"(/proc): the bench process (consumer, handler, worker), the dev server, and PostgreSQL's processes.", b.cfg.temporalEvents, b.cfg.effectRate, b.cfg.temporalDuration, bareStart)
	}
}
