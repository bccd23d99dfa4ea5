package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DBOS's names and settings.
const (
	dbosModule = "github.com/dbos-inc/dbos-transact-golang"
	// dbosApp is the application of the consumer and of the producer's
	// handle alike, so the producer's rows are the consumer's to run.
	dbosApp = "outflow_peers"
	// dbosSchema is DBOS's system schema inside the contender's scratch
	// database: WithEnqueueTransaction needs the system tables in the
	// order's database, and the scratch database is the round's own.
	dbosSchema       = "dbos"
	dbosQueueName    = "order_events"
	dbosWorkflowName = "order_event"
	// dbosProducerConns sizes the producer's handle's pool, which only
	// NewContext's checks use (see producer).
	dbosProducerConns = 1
	// dbosStepRetries: a sink's error asks for a redelivery, which in DBOS
	// is a retried step (default: none, the workflow fails).
	dbosStepRetries = 10
	// dbosTunedPoll: WithQueueBasePollingInterval, the queue runner's wait
	// between polls (default 1s, the handoff latency of an idle queue).
	dbosTunedPoll = 10 * time.Millisecond
	// dbosShutdown bounds the consumer's Shutdown.
	dbosShutdown = 30 * time.Second
)

// dbosEvent is the input of an order event's workflow.
type dbosEvent struct {
	EventID uuid.UUID       `json:"event_id"`
	OrderID string          `json:"order_id"`
	Seq     int64           `json:"seq"`
	Payload json.RawMessage `json:"payload"`
}

// dbosQueue is DBOS Transact used as its documentation shows a durable
// queue fed from the caller's transaction: Enqueue with
// WithEnqueueTransaction in the order's transaction, a workflow per event
// whose one step does the side effect. The events of an order share a
// partition of the queue (partition key = order id) with
// WithPartitionConcurrency 1, which "limits the workflows from any one
// partition running concurrently across all executors": one at a time. A
// partition dequeues by (priority, created_at), and created_at is now() in
// ms, the enqueuing transaction's start, so an order's events enqueued in
// one transaction tie: the priority is the event's sequence, which breaks
// the tie.
type dbosQueue struct {
	mu sync.Mutex
	// producers are the producer's DBOS handles, one per scratch database,
	// opened on the first Enqueue there and shut down by the next stop of
	// a consumer on that database.
	producers map[string]*dbosProducer
}

type dbosProducer struct {
	handle dbos.Context
	pool   *pgxpool.Pool
}

func (*dbosQueue) Name() string { return "dbos" }

// dbosContext is a DBOS context on pool, its logs quiet.
func dbosContext(ctx context.Context, pool *pgxpool.Pool) (dbos.Context, error) {
	return dbos.NewContext(ctx, dbos.Config{
		AppName:        dbosApp,
		SystemDBPool:   pool,
		DatabaseSchema: dbosSchema,
		Logger:         quietLogger,
	})
}

// dbosQueueOptions is the queue of profile p.
func dbosQueueOptions(p Profile) []dbos.QueueOption {
	opts := []dbos.QueueOption{dbos.WithPartitionConcurrency(1), dbos.WithQueueOnConflict(dbos.QueueConflictAlwaysUpdate)}
	if p == Tuned {
		opts = append(opts, dbos.WithQueueBasePollingInterval(dbosTunedPoll))
	}
	return opts
}

// Install migrates DBOS's system schema (NewContext does on a pool it is
// given) and registers the queue, so that a producer may enqueue before
// any consumer ran.
func (*dbosQueue) Install(ctx context.Context, pool *pgxpool.Pool) error {
	dctx, err := dbosContext(ctx, pool)
	if err != nil {
		return err
	}
	_, err = dbos.RegisterQueue(dctx, dbosQueueName, dbosQueueOptions(Default)...)
	if shutErr := dctx.Shutdown(dctx, dbosShutdown); err == nil {
		err = shutErr
	}
	return err
}

// producer is the producer's DBOS handle on tx's database: a Context
// that is never launched (a Context is a Client; NewClient would start a
// notification listener that keeps a connection open). Its pool is emptied
// once NewContext has checked the schema: the enqueue runs on the caller's
// transaction, so the handle holds no connection between enqueues, as the
// cost figures need (no client left on the database while they are read).
func (d *dbosQueue) producer(ctx context.Context, tx pgx.Tx) (dbos.Client, error) {
	conn := tx.Conn().Config()
	d.mu.Lock()
	defer d.mu.Unlock()
	if h, ok := d.producers[conn.Database]; ok {
		return h.handle, nil
	}
	cfg, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig = conn.Copy()
	cfg.ConnConfig.Tracer = nil // the producer's statements are not the consumer's
	cfg.MaxConns = dbosProducerConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	handle, err := dbosContext(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	pool.Reset()
	if d.producers == nil {
		d.producers = map[string]*dbosProducer{}
	}
	d.producers[conn.Database] = &dbosProducer{handle: handle, pool: pool}
	return handle, nil
}

// closeProducer shuts down the producer's handle on database, if one is open.
func (d *dbosQueue) closeProducer(database string) error {
	d.mu.Lock()
	h, ok := d.producers[database]
	delete(d.producers, database)
	d.mu.Unlock()
	if !ok {
		return nil
	}
	err := h.handle.Shutdown(h.handle, dbosShutdown)
	h.pool.Close()
	return err
}

func (d *dbosQueue) Enqueue(ctx context.Context, tx pgx.Tx, _ Profile, order *pgx.Batch, events []Event) error {
	producer, err := d.producer(ctx, tx)
	if err != nil {
		return err
	}
	if order.Len() > 0 {
		if err := tx.SendBatch(ctx, order).Close(); err != nil {
			return err
		}
	}
	// DBOS enqueues one workflow per call, one INSERT each.
	for _, e := range events {
		_, err := dbos.Enqueue[string](producer, dbosQueueName, dbosWorkflowName,
			dbosEvent{EventID: e.ID, OrderID: e.OrderID, Seq: e.Seq, Payload: e.Payload},
			dbos.WithEnqueueTransaction(tx),
			dbos.WithEnqueueWorkflowID(e.ID.String()),
			dbos.WithEnqueueQueuePartitionKey(e.OrderID),
			dbos.WithEnqueuePriority(uint(e.Seq)))
		if err != nil {
			return err
		}
	}
	return nil
}

func (d *dbosQueue) Start(ctx context.Context, pool *pgxpool.Pool, sink Sink, p Profile) (func(context.Context) error, error) {
	dctx, err := dbosContext(ctx, pool)
	if err != nil {
		return nil, err
	}
	deliver := func(ctx dbos.Context, in dbosEvent) (string, error) {
		return dbos.RunAsStep(ctx, func(ctx context.Context) (string, error) {
			return "", sink.Deliver(ctx, Event{ID: in.EventID, OrderID: in.OrderID, Seq: in.Seq, Payload: in.Payload})
		}, dbos.WithStepName("deliver"), dbos.WithStepMaxRetries(dbosStepRetries))
	}
	dbos.RegisterWorkflow(dctx, deliver, dbos.WithWorkflowName(dbosWorkflowName))
	if _, err := dbos.RegisterQueue(dctx, dbosQueueName, dbosQueueOptions(p)...); err != nil {
		_ = dctx.Shutdown(dctx, dbosShutdown)
		return nil, err
	}
	if err := dbos.Launch(dctx); err != nil {
		_ = dctx.Shutdown(dctx, dbosShutdown)
		return nil, err
	}
	database := pool.Config().ConnConfig.Database
	return func(context.Context) error {
		err := dctx.Shutdown(dctx, dbosShutdown)
		if cerr := d.closeProducer(database); err == nil {
			err = cerr
		}
		return err
	}, nil
}

func (*dbosQueue) Pending(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	return pending(ctx, pool, qDBOSPending)
}

// Tables: DBOS's system schema (workflow_status is its queue).
func (*dbosQueue) Tables() []string { return []string{dbosSchema + ".%"} }

func (*dbosQueue) Settings(p Profile) string {
	s := fmt.Sprintf("DBOS Transact Go %s; system schema %q in the contender's database (WithEnqueueTransaction needs it there); "+
		"one workflow per event, enqueued in the order's transaction, its one step the sink's call (WithStepMaxRetries %d); "+
		"queue %q partitioned by order id with WithPartitionConcurrency 1 (an order's events one at a time), "+
		"priority = the event's sequence (created_at, the dequeue's tie-break, is the enqueuing transaction's start); "+
		"WorkerConcurrency unset (unlimited), base polling interval 1s (the default)",
		moduleVersion(dbosModule), dbosSchema, dbosStepRetries, dbosQueueName)
	if p == Tuned {
		s = fmt.Sprintf("as default but WithQueueBasePollingInterval %s (documented as the queue's polling cadence)", dbosTunedPoll)
	}
	return s
}
