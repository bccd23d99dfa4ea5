package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// River's settings. It has no default worker count: Config.Queues is
// mandatory, and its documentation's getting-started (doc.go) gives the
// default queue MaxWorkers 100, which both profiles keep.
const (
	riverMaxWorkers = 100
	// riverTunedFetchCooldown: FetchCooldown is documented as the limit of
	// throughput ("Throughput is limited by this value"; default 100ms). A
	// fetch takes at most MaxWorkers jobs, so the default caps a client at
	// about 1,000 jobs/s.
	riverTunedFetchCooldown = 5 * time.Millisecond
)

// orderEventArgs is the River job of one order event.
type orderEventArgs struct {
	EventID uuid.UUID       `json:"event_id"`
	OrderID string          `json:"order_id"`
	Seq     int64           `json:"seq"`
	Payload json.RawMessage `json:"payload"`
}

func (orderEventArgs) Kind() string { return "order_event" }

// orderEventWorker hands a job to the sink.
type orderEventWorker struct {
	river.WorkerDefaults[orderEventArgs]
	sink Sink
}

func (w *orderEventWorker) Work(ctx context.Context, job *river.Job[orderEventArgs]) error {
	a := job.Args
	return w.sink.Deliver(ctx, Event{ID: a.EventID, OrderID: a.OrderID, Seq: a.Seq, Payload: a.Payload})
}

// riverQueue is River used as its documentation recommends for a
// transactional outbox: InsertTx in the order's transaction, a worker that
// does the side effect.
type riverQueue struct {
	mu sync.Mutex
	// inserters are insert-only clients, one per profile: riverpgxv5 allows
	// a nil pool for a client that only calls InsertTx and InsertManyTx. The
	// profile matters to the producer too: a client notifies the workers of
	// an insert at most once per FetchCooldown.
	inserters map[Profile]*river.Client[pgx.Tx]
}

func (*riverQueue) Name() string { return "river" }

func (*riverQueue) Install(ctx context.Context, pool *pgxpool.Pool) error {
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

// inserter is the insert-only client of profile p.
func (r *riverQueue) inserter(p Profile) (*river.Client[pgx.Tx], error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.inserters[p]; ok {
		return c, nil
	}
	c, err := river.NewClient(riverpgxv5.New(nil), riverConfig(p))
	if err != nil {
		return nil, err
	}
	if r.inserters == nil {
		r.inserters = map[Profile]*river.Client[pgx.Tx]{}
	}
	r.inserters[p] = c
	return c, nil
}

// riverConfig is the client configuration of profile p, without queues.
func riverConfig(p Profile) *river.Config {
	cfg := &river.Config{Logger: quietLogger}
	if p == Tuned {
		cfg.FetchCooldown = riverTunedFetchCooldown
	}
	return cfg
}

func (r *riverQueue) Enqueue(ctx context.Context, tx pgx.Tx, p Profile, order *pgx.Batch, events []Event) error {
	inserter, err := r.inserter(p)
	if err != nil {
		return err
	}
	if order.Len() > 0 {
		if err := tx.SendBatch(ctx, order).Close(); err != nil {
			return err
		}
	}
	if len(events) == 1 {
		e := events[0]
		_, err := inserter.InsertTx(ctx, tx, orderEventArgs{EventID: e.ID, OrderID: e.OrderID, Seq: e.Seq, Payload: e.Payload}, nil)
		return err
	}
	params := make([]river.InsertManyParams, len(events))
	for i, e := range events {
		params[i] = river.InsertManyParams{Args: orderEventArgs{EventID: e.ID, OrderID: e.OrderID, Seq: e.Seq, Payload: e.Payload}}
	}
	_, err = inserter.InsertManyTx(ctx, tx, params)
	return err
}

func (*riverQueue) Start(ctx context.Context, pool *pgxpool.Pool, sink Sink, p Profile) (func(context.Context) error, error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &orderEventWorker{sink: sink})
	cfg := riverConfig(p)
	cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: riverMaxWorkers}}
	cfg.Workers = workers
	client, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		return nil, err
	}
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	return client.Stop, nil
}

func (*riverQueue) Pending(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	return pending(ctx, pool, qRiverPending)
}

// Tables: river_job and River's other tables (leader, queue, migrations).
func (*riverQueue) Tables() []string { return []string{"public.river\\_%"} }

func (*riverQueue) Settings(p Profile) string {
	s := fmt.Sprintf("Queues{default: MaxWorkers %d} (River's getting-started value; there is no default), "+
		"FetchCooldown %s, FetchPollInterval %s, LISTEN/NOTIFY on insert",
		riverMaxWorkers, river.FetchCooldownDefault, river.FetchPollIntervalDefault)
	if p == Tuned {
		s = fmt.Sprintf("as default but Config.FetchCooldown %s, for the workers and the inserting client alike (documented: "+
			"\"Throughput is limited by this value\"; it also spaces a client's insert notifications)", riverTunedFetchCooldown)
	}
	return s
}
