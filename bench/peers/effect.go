package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

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
// and then places orders at the Temporal handoff's rate: effect_started_per_s
// is the backlog over the time from the contender's start to the last
// effect's first step, and the effect_started samples are each order's time
// from its COMMIT to its effect's first step.
func (b *bench) effectRound(ctx context.Context, c Contender, cfg *pgxpool.Config, layout uint64) error {
	e := b.effects
	sink := e.sinkFor(c)
	tn, perOrder := b.cfg.temporalEvents, max(1, b.cfg.events/b.cfg.orders)
	b.progress("round effect %s: drain %d events until each effect's first step runs", c.Name(), tn)
	d, err := b.drain(ctx, c, cfg, Tuned, tn, max(1, tn/perOrder), layout, sink)
	if err != nil {
		return fmt.Errorf("effect drain: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, handoffTimeout)
	defer cancel()
	last, err := e.f.waitAll(wctx, d.ids)
	if err != nil {
		return fmt.Errorf("effect drain: %w", err)
	}
	rate := float64(tn) / last.Sub(d.start).Seconds()
	b.progress("  %.0f effects started/s", rate)
	b.res.add(c.Name(), "effect_started_per_s", rate)
	lat, err := b.handoffUntil(ctx, c, cfg, Tuned, b.cfg.temporalRate, b.cfg.temporalDuration, sink, e.f)
	if err != nil {
		return fmt.Errorf("effect handoff: %w", err)
	}
	b.res.addSamples(c.Name(), "effect_started", lat)
	return nil
}
