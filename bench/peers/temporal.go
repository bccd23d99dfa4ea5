package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/outflow/outflow/internal/bench/benchcpu"
	"github.com/outflow/outflow/internal/routes"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// temporalSink starts one workflow per event, with the event's id as the
// workflow ID, through outflow's own Temporal publisher (temporalpub): every
// contender's handler sends the request the outflow relay sends, so they
// differ only by how the event got there. For River that handler is the
// worker; for Watermill it is the subscriber's handler — Watermill has no
// Temporal Pub/Sub, and this is the small handler its docs suggest for a
// destination without one.
type temporalSink struct{ pub *temporalpub.Publisher }

func (s temporalSink) Deliver(ctx context.Context, e Event) error {
	return s.pub.Publish(ctx, outbox.Event{
		ID: e.ID, AggregateType: orders.AggregateType, AggregateID: e.OrderID, Sequence: e.Seq,
		Type: orders.EventOrderCreated, SchemaVersion: orders.OrderCreatedV1, Payload: e.Payload,
		OccurredAt: time.Now(),
	})
}

// temporal is a dev server started from the repository's Temporal CLI
// (bin/temporal, or $OUTFLOW_TEMPORAL_CLI; never a download), in memory,
// and a sink on a task queue no worker polls: the figures are Temporal's
// accept path. The server and its workflows go when the bench ends.
type temporal struct {
	srv  *devserver.Server
	sink temporalSink
	// pid is the dev server's process (the effect round's CPU split), 0
	// when it could not be found (the split then counts every process
	// named temporal or temporal-server).
	pid int
}

func startTemporal(ctx context.Context) (*temporal, error) {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	srv, err := devserver.New(sctx, devserver.Options{LogLevel: "error", Output: io.Discard})
	if err != nil {
		return nil, err
	}
	pub, err := temporalpub.New(srv.Client(), srv.ClientOptions(""), temporalpub.Config{TaskQueue: "outflow-peers", Routes: routes.Orders()})
	if err != nil {
		_ = srv.Stop()
		return nil, err
	}
	return &temporal{srv: srv, sink: temporalSink{pub: pub}, pid: benchcpu.PIDServing("start-dev", strconv.Itoa(srv.Port()))}, nil
}

func (t *temporal) stop() error {
	if err := t.srv.Stop(); err != nil {
		return fmt.Errorf("stop the Temporal dev server: %w", err)
	}
	return nil
}
