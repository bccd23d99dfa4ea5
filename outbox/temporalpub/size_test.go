package temporalpub_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"google.golang.org/grpc"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// Events larger than Temporal takes (issue 37, defects 3 and 4). Temporal's
// frontend refuses a request over its gRPC message limit (4 MiB) with
// ResourceExhausted "grpc: received message larger than max", and a start
// whose input is over the namespace's blob limit (2 MiB by default) with
// InvalidArgument "Blob data size exceeds limit.". Neither is a throttle nor
// an outage: the event can never be taken, so it is quarantined at its
// first attempt, and nothing else waits for it but its own order.

const (
	// overGRPC is over the frontend's 4 MiB message limit.
	overGRPC = 5 << 20
	// overBlob is over the 2 MiB blob limit, under the message limit.
	overBlob = 3 << 20
)

// blobRoutes route "Blob" events, whose payload nothing validates, to a
// workflow no worker runs: a start only has to be accepted.
var blobRoutes = temporalpub.Routes{"Blob": {Workflow: "BlobWorkflow"}}

// blobEvent is a Blob event of order orderID whose payload is about size
// bytes of incompressible JSON (gRPC may compress a request, and the limits
// apply after decompression too, but a real payload compresses little).
func blobEvent(t *testing.T, orderID string, size int) outbox.Event {
	t.Helper()
	raw := make([]byte, size/2)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	e, err := outbox.NewEvent("order", orderID, "Blob", 1, map[string]string{"order_id": orderID, "data": hex.EncodeToString(raw)})
	require.NoError(t, err)
	return e
}

// throttleClient is a client of the shared dev server dialled as the
// starter dials it: with ThrottleInterceptor, so that every
// ResourceExhausted reaches the relay as a throttle.
func throttleClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: temporal.Address(), Logger: log.NewStructuredLogger(quietLogger()),
		ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(temporalpub.ThrottleInterceptor())}}})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// requireNoWorkflow fails unless Temporal has no workflow for event id.
func requireNoWorkflow(t *testing.T, id uuid.UUID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := temporal.Client().DescribeWorkflow(ctx, id.String(), "")
	require.ErrorAs(t, err, new(*serviceerror.NotFound), "no workflow for the oversized event %s", id)
}

// requireSinkUntroubled fails if the relay counted a throttle or opened its
// breaker for the oversized events.
func requireSinkUntroubled(t *testing.T, reg *prometheus.Registry) {
	t.Helper()
	require.Zero(t, promtest.Value(t, reg, "outbox_sink_throttled_total"), "a size refusal counted as a throttle")
	require.Zero(t, promtest.Value(t, reg, "outbox_publish_errors_total", "fault", "throttle"))
	require.Zero(t, promtest.Value(t, reg, "outbox_publish_errors_total", "fault", "sink"))
	require.Equal(t, 1.0, promtest.Value(t, reg, "outbox_sink_up"))
}

// TestOversizedEventIsQuarantinedAtOnce: on the poll source, an event over
// the gRPC message limit and one over the blob limit are each quarantined at
// their first attempt (MaxAttempts is the default 20), with an error naming
// the limit, no workflow, no throttle counted; their orders' later events
// wait behind them and every other order flows.
func TestOversizedEventIsQuarantinedAtOnce(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	tq := taskQueue(t)
	reg := prometheus.NewRegistry()
	r, err := outbox.NewRelay(pool, newPublisher(t, throttleClient(t), temporalpub.Config{TaskQueue: tq, Routes: blobRoutes}),
		outbox.RelayConfig{Logger: quietLogger(), Registerer: reg, PollInterval: 100 * time.Millisecond})
	require.NoError(t, err)

	big := testdb.Enqueue(t, pool, blobEvent(t, "o-grpc", overGRPC))[0]
	blob := testdb.Enqueue(t, pool, blobEvent(t, "o-blob", overBlob))[0]
	held := testdb.Enqueue(t, pool, blobEvent(t, "o-grpc", 100), blobEvent(t, "o-blob", 100))
	var healthy []outbox.Event
	for i := range 5 {
		healthy = append(healthy, testdb.Enqueue(t, pool, blobEvent(t, fmt.Sprintf("o-ok-%d", i), 100))...)
	}
	runRelay(t, r)
	require.Eventually(t, func() bool { return allPublished(pool, healthy) }, 30*time.Second, 20*time.Millisecond, "the other orders flow")
	for _, c := range []struct {
		e     outbox.Event
		limit string
	}{{big, "larger than max"}, {blob, "Blob data size exceeds limit"}} {
		var (
			attempts    int
			quarantined *time.Time
			lastError   *string
		)
		assert.Eventually(t, func() bool {
			err := pool.QueryRow(context.Background(), `SELECT attempt_count, quarantined_at, last_error FROM outbox_events WHERE event_id = $1`, c.e.ID).
				Scan(&attempts, &quarantined, &lastError)
			return err == nil && quarantined != nil
		}, 30*time.Second, 20*time.Millisecond)
		require.NotNil(t, quarantined, "the oversized event %s is quarantined (%d attempts, last error %s)", c.e.AggregateID, attempts, derefOr(lastError, "none"))
		require.Equal(t, 1, attempts, "%s: quarantined at its first attempt", c.e.AggregateID)
		require.Contains(t, *lastError, c.limit)
		require.Contains(t, *lastError, "never")
		t.Logf("%s: %s", c.e.AggregateID, *lastError)
		requireNoWorkflow(t, c.e.ID)
	}
	require.False(t, allPublished(pool, held[:1]) || allPublished(pool, held[1:]), "an order's later event waits behind its oversized one")
	requireSinkUntroubled(t, reg)
}

// TestOversizedEventOnTheLogHoldsOnlyItsOrder: on the log source, an event
// over the gRPC message limit and one over the blob limit go to
// quarantined holds at their first attempt, and the other orders of the
// same partition (outbox_log_partition) flow on, their events read after
// the oversized ones; no throttle is counted, the breaker stays closed.
func TestOversizedEventOnTheLogHoldsOnlyItsOrder(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	tq := taskQueue(t)
	reg := prometheus.NewRegistry()
	r, err := outbox.NewRelay(pool, newPublisher(t, throttleClient(t), temporalpub.Config{TaskQueue: tq, Routes: blobRoutes}),
		// A window of two: the oversized events fill the first batch, so the
		// partition's other orders are read only once the cursor passes them.
		outbox.RelayConfig{Logger: quietLogger(), Registerer: reg, PollInterval: 100 * time.Millisecond, BatchSize: 2, Source: "log"})
	require.NoError(t, err)
	orders, part := testdb.SameLogPartition(t, pool, tq, 5)
	logQ := outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true})

	big := testdb.EnqueueWith(t, pool, logQ, blobEvent(t, orders[0], overGRPC))[0]
	blob := testdb.EnqueueWith(t, pool, logQ, blobEvent(t, orders[1], overBlob))[0]
	// Read after the oversized events, in their partition.
	var healthy []outbox.Event
	for _, o := range orders[2:] {
		healthy = append(healthy, testdb.EnqueueWith(t, pool, logQ, blobEvent(t, o, 100), blobEvent(t, o, 100))...)
	}
	held := testdb.EnqueueWith(t, pool, logQ, blobEvent(t, orders[0], 100), blobEvent(t, orders[1], 100))
	outboxtest.Run(t, r)

	require.Eventually(t, func() bool { return workflowsExist(healthy) }, time.Minute, 100*time.Millisecond,
		"the partition's other orders are delivered")
	var holds []outboxops.HeldOrder
	held2 := func() bool { return len(holds) == 2 && holds[0].Quarantined && holds[1].Quarantined }
	assert.Eventually(t, func() bool {
		holds, err = outboxops.LogHolds(context.Background(), pool)
		require.NoError(t, err)
		return held2()
	}, 30*time.Second, 20*time.Millisecond)
	require.True(t, held2(), "the oversized events' orders are held, quarantined: %+v", holds)
	limits := map[string]string{orders[0]: "larger than max", orders[1]: "Blob data size exceeds limit"}
	for _, h := range holds {
		require.Equal(t, part, h.Partition)
		require.Contains(t, h.LastError, limits[h.AggregateID], "hold of %s", h.AggregateID)
		require.Equal(t, 1, h.Attempts, "hold of %s: quarantined at its first attempt", h.AggregateID)
	}
	for _, e := range append([]outbox.Event{big, blob}, held...) {
		requireNoWorkflow(t, e.ID)
	}
	requireSinkUntroubled(t, reg)
}

// workflowsExist reports whether every event's workflow was started; safe
// inside Eventually.
func workflowsExist(events []outbox.Event) bool {
	for _, e := range events {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := temporal.Client().DescribeWorkflow(ctx, e.ID.String(), "")
		cancel()
		if err != nil {
			return false
		}
	}
	return true
}

// derefOr is *s, or or when s is nil.
func derefOr(s *string, or string) string {
	if s == nil {
		return or
	}
	return *s
}
