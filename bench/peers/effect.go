package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"golang.org/x/sync/errgroup"

	"github.com/outflow/outflow/internal/bench/benchcpu"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// The effect round times what a billing team waits for: from the order's
// COMMIT to the first step of the effect it causes running. The handoff
// rounds stop at the sink's acknowledgement (a workflow start accepted);
// here the effect is a durable workflow's first step. For outflow, River
// and Watermill that is a Temporal workflow's first activity, started
// through the contender's handler (the temporal sink) and run by a worker
// of the bench's dev server; for DBOS, which runs the workflow in the
// consumer's process, it is the DBOS workflow's step, which the contender's
// delivery already is. Same definition, each contender's own engine.
const (
	effectWorkflowName = "PeersEffectWorkflow"
	effectActivityName = "PeersEffectStarted"
	effectTaskQueue    = "outflow-peers-effect"
)

// effects records when each event's effect ran its first step (the first
// time: a step retried is still one effect).
type effects struct {
	mu sync.Mutex
	at map[uuid.UUID]time.Time
}

func newEffects() *effects { return &effects{at: map[uuid.UUID]time.Time{}} }

func (f *effects) started(id uuid.UUID) {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.at[id]; !ok {
		f.at[id] = now
	}
}

func (f *effects) startedAt(id uuid.UUID) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.at[id]
	return t, ok
}

// waitAll waits until the effect of every event of ids started and returns
// the last start.
func (f *effects) waitAll(ctx context.Context, ids []uuid.UUID) (time.Time, error) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		var last time.Time
		missing := 0
		f.mu.Lock()
		for _, id := range ids {
			t, ok := f.at[id]
			if !ok {
				missing++
			} else if t.After(last) {
				last = t
			}
		}
		f.mu.Unlock()
		if missing == 0 {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%d of %d effects started: %w", len(ids)-missing, len(ids), ctx.Err())
		case <-tick.C:
		}
	}
}

// directEffect is the sink of a contender whose delivery is the effect's
// first step (DBOS's workflow step).
type directEffect struct{ f *effects }

func (d directEffect) Deliver(_ context.Context, e Event) error {
	d.f.started(e.ID)
	return nil
}

// effectWorker runs the effect workflow on the bench's dev server: one
// activity, whose start is the effect's first step. sink starts it for an
// event, as the temporal sink does (outflow's Temporal publisher, workflow
// ID = event id).
type effectWorker struct {
	w    worker.Worker
	f    *effects
	sink temporalSink
}

func (t *temporal) startEffects() (*effectWorker, error) {
	f := newEffects()
	pub, err := temporalpub.New(t.srv.Client(), t.srv.ClientOptions(""), temporalpub.Config{
		TaskQueue: effectTaskQueue,
		Routes:    temporalpub.Routes{orders.EventOrderCreated: {Workflow: effectWorkflowName}},
	})
	if err != nil {
		return nil, err
	}
	w := worker.New(t.srv.Client(), effectTaskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(effectWorkflow, workflow.RegisterOptions{Name: effectWorkflowName})
	w.RegisterActivityWithOptions(func(ctx context.Context) error {
		id, err := uuid.Parse(activity.GetInfo(ctx).WorkflowExecution.ID)
		if err != nil {
			return err
		}
		f.started(id)
		return nil
	}, activity.RegisterOptions{Name: effectActivityName})
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start the effect round's worker: %w", err)
	}
	return &effectWorker{w: w, f: f, sink: temporalSink{pub: pub}}, nil
}

// effectWorkflow is the effect: its first step is one activity.
func effectWorkflow(ctx workflow.Context, _ temporalpub.EventInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	return workflow.ExecuteActivity(ctx, effectActivityName).Get(ctx, nil)
}

// sinkFor is the effect's sink for c: DBOS's delivery is its step; every
// other contender's handler starts the effect workflow.
func (e *effectWorker) sinkFor(c Contender) Sink {
	if c.Name() == (&dbosQueue{}).Name() {
		return directEffect{f: e.f}
	}
	return e.sink
}

// effectRound drains a backlog of the Temporal phase's size into the effect
// and then places orders at -effect-rate: effect_started_per_s is the
// backlog over the time from the contender's start to the last effect's
// first step, with the CPU over that window split between the
// bench process (the contender, its handler and the effect's worker), the
// Temporal dev server and PostgreSQL; the effect_started samples
// are each order's time from its COMMIT to its effect's first step.
func (b *bench) effectRound(ctx context.Context, c Contender, cfg *pgxpool.Config, layout uint64) error {
	e := b.effects
	sink := e.sinkFor(c)
	tn, perOrder := b.cfg.temporalEvents, max(1, b.cfg.events/b.cfg.orders)
	b.progress("round effect %s: drain %d events until each effect's first step runs", c.Name(), tn)
	// The CPU window ends when the sink has every event, while the
	// contender's connections are open: a backend that exits takes its
	// ticks with it.
	meter := benchcpu.Meter{SinkPID: b.temporal.pid}
	var before, after benchcpu.Sample
	var errBefore, errAfter error
	d, err := b.drainObserved(ctx, c, cfg, Tuned, tn, max(1, tn/perOrder), layout, sink,
		func() { before, errBefore = meter.Sample() }, func() { after, errAfter = meter.Sample() })
	if err != nil {
		return fmt.Errorf("effect drain: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, handoffTimeout)
	defer cancel()
	last, err := e.f.waitAll(wctx, d.ids)
	if err != nil {
		return fmt.Errorf("effect drain: %w", err)
	}
	if err := b.addEffectRate(c.Name(), tn, d.start, last, before, after, errors.Join(errBefore, errAfter)); err != nil {
		return err
	}
	lat, err := b.handoffUntil(ctx, c, cfg, Tuned, b.cfg.effectRate, b.cfg.temporalDuration, sink, e.f)
	if err != nil {
		return fmt.Errorf("effect handoff: %w", err)
	}
	b.res.addSamples(c.Name(), "effect_started", lat)
	return nil
}

// addEffectRate records a saturation window's rate and CPU split: n effects
// started from start to last, and the cores busy between the samples
// before and after (sampleErr: either failed).
func (b *bench) addEffectRate(name string, n int, start, last time.Time, before, after benchcpu.Sample, sampleErr error) error {
	if sampleErr != nil {
		return fmt.Errorf("effect cpu: %w", sampleErr)
	}
	rate := float64(n) / last.Sub(start).Seconds()
	cpu := after.Sub(before).Cores()
	b.progress("  %.0f effects started/s; cores busy: bench process %.2f, Temporal %.2f, PostgreSQL %.2f", rate, cpu.Self, cpu.Temporal, cpu.Postgres)
	b.res.add(name, "effect_started_per_s", rate)
	b.res.add(name, "effect_cpu_consumer_cores", cpu.Self)
	b.res.add(name, "effect_cpu_temporal_cores", cpu.Temporal)
	b.res.add(name, "effect_cpu_postgres_cores", cpu.Postgres)
	return nil
}

// bareStart is the effect round's baseline, the same sink without an
// outbox: an order-only transaction commits, then the committing goroutine
// starts the effect's workflow itself (the request outflow's relay sends,
// workflow ID = the event's id), the dual write the outbox exists to
// avoid. Its effect_started figures are the floor a contender's are set
// against (effect_started_p99_vs_bare).
const bareStart = "bare_start"

// bareRound runs the baseline in a scratch database of its own: the
// saturation rate (the Temporal phase's backlog, started by 16 goroutines
// as fast as they commit) and the latency at -effect-rate.
func (b *bench) bareRound(ctx context.Context, r int) error {
	name, cfg, err := b.srv.scratchNamed(ctx, outflowPoll{}, fmt.Sprintf("peers_bare_%d_r%d", os.Getpid(), r))
	if err != nil {
		return err
	}
	defer b.srv.Drop(context.WithoutCancel(ctx), name) //nolint:errcheck // close drops leftovers
	pool, err := openPool(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	sink, f := b.effects.sink, b.effects.f
	// place commits an order and starts its effect; at is COMMIT's return.
	place := func() (id uuid.UUID, at time.Time, err error) {
		order, e, err := newOrder()
		if err != nil {
			return uuid.Nil, time.Time{}, err
		}
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, order).Close() }); err != nil {
			return uuid.Nil, time.Time{}, fmt.Errorf("place order: %w", err)
		}
		at = time.Now()
		return e.ID, at, sink.Deliver(ctx, e)
	}

	n := b.cfg.temporalEvents
	b.progress("round %d %s: %d orders, each committed and then its effect started, by 16 goroutines", r+1, bareStart, n)
	meter := benchcpu.Meter{SinkPID: b.temporal.pid}
	before, sampleErr := meter.Sample()
	start := time.Now()
	ids := make([]uuid.UUID, n)
	var g errgroup.Group
	g.SetLimit(16)
	for i := range n {
		g.Go(func() (err error) {
			ids[i], _, err = place()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, handoffTimeout)
	defer cancel()
	last, err := f.waitAll(wctx, ids)
	if err != nil {
		return fmt.Errorf("%s: %w", bareStart, err)
	}
	after, err := meter.Sample()
	if err := b.addEffectRate(bareStart, n, start, last, before, after, errors.Join(sampleErr, err)); err != nil {
		return err
	}

	rate, warm := b.cfg.effectRate, b.cfg.effectRate
	total := warm + int(b.cfg.temporalDuration.Seconds()*float64(rate))
	b.progress("round %d %s: %d orders/s for %s", r+1, bareStart, rate, b.cfg.temporalDuration)
	type placed struct {
		id uuid.UUID
		at time.Time
	}
	all := make([]placed, total)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var h errgroup.Group
	for i := range total {
		select {
		case <-ctx.Done():
			_ = h.Wait()
			return ctx.Err()
		case <-tick.C:
		}
		h.Go(func() (err error) {
			all[i].id, all[i].at, err = place()
			return err
		})
	}
	if err := h.Wait(); err != nil {
		return err
	}
	timed := make([]uuid.UUID, 0, total-warm)
	for _, p := range all[warm:] {
		timed = append(timed, p.id)
	}
	if _, err := f.waitAll(wctx, timed); err != nil {
		return fmt.Errorf("%s: %w", bareStart, err)
	}
	lat := make([]time.Duration, 0, len(timed))
	for _, p := range all[warm:] {
		got, _ := f.startedAt(p.id)
		lat = append(lat, got.Sub(p.at))
	}
	b.res.addSamples(bareStart, "effect_started", lat)
	return nil
}
