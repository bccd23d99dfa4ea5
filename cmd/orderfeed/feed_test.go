package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/natscodec"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/inbox"
	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/natspub"
	"github.com/outflow/outflow/outbox/natspub/natsconsumer"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testlog"
)

// TestFeedProjectsOrderEvents: an order's OrderCreated and OrderCancelled,
// published as the starter's relay would (the created one twice, as after
// a lost mark), and another order's OrderCreated end as one row each in
// order_feed with the fields of the events, the cancelled order's position
// at its second event.
func TestFeedProjectsOrderEvents(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, _ := testdb.New(t)
	_, err := qSchema.Exec(ctx, pool, namedsql.NoRows{})
	require.NoError(t, err)
	_, err = qSchema.Exec(ctx, pool, namedsql.NoRows{})
	require.NoError(t, err, "creating the schema again is a no-op")
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, namedsql.CheckColumns(ctx, conn.Conn(), statements...))
	conn.Release()

	nc, err := nats.Connect(nats.DefaultURL)
	require.NoError(t, err, "the test needs NATS with JetStream at %s", nats.DefaultURL)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	id := strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	stream, prefix := "ORDERFEED_"+strings.ToUpper(id), "orderfeed"+id
	pub, err := natspub.New(ctx, js, natspub.Config{Stream: stream, SubjectPrefix: prefix, CreateStream: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, js.DeleteStream(context.Background(), stream)) }()

	a, b := uuid.NewString(), uuid.NewString()
	occurred := time.Now().UTC().Truncate(time.Microsecond)
	event := func(orderID string, seq int64, eventType string, payload any) outbox.Event {
		e, err := outbox.NewEvent(orders.AggregateType, orderID, eventType, 1, payload)
		require.NoError(t, err)
		e.ID, e.Sequence, e.OccurredAt = uuid.New(), seq, occurred
		return e
	}
	aCreated := event(a, 1, orders.EventOrderCreated, orders.OrderCreated{OrderID: a, Currency: "usd", Amount: 1250})
	for _, e := range []outbox.Event{
		aCreated, aCreated,
		event(b, 1, orders.EventOrderCreated, orders.OrderCreated{OrderID: b, Currency: "eur", Amount: 990}),
		event(a, 2, orders.EventOrderCancelled, orders.OrderCancelled{OrderID: a, CreatedEventID: aCreated.ID.String()}),
	} {
		require.NoError(t, pub.Publish(ctx, e))
	}

	ib, err := inbox.New(nil)
	require.NoError(t, err)
	c, err := natsconsumer.New(ctx, js, pool, natsconsumer.Config{Name: consumerName, Stream: stream, FilterSubject: prefix + ".order.>",
		Inbox: ib, Positions: feed{}, Apply: feed{}.apply, FetchWait: 200 * time.Millisecond})
	require.NoError(t, err)
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx) }()
	defer func() { stop(); require.NoError(t, <-done) }()

	type row struct {
		OrderID     string     `db:"order_id"`
		Status      string     `db:"status"`
		Amount      int64      `db:"amount"`
		Currency    string     `db:"currency"`
		CreatedAt   time.Time  `db:"created_at"`
		CancelledAt *time.Time `db:"cancelled_at"`
		Sequence    int64      `db:"last_sequence"`
		Applied     int64      `db:"events_applied"`
	}
	var rows []row
	require.Eventually(t, func() bool {
		r, err := pool.Query(ctx, `SELECT order_id, status, amount, currency, created_at, cancelled_at, last_sequence, events_applied FROM order_feed ORDER BY amount DESC`)
		require.NoError(t, err)
		rows, err = pgx.CollectRows(r, pgx.RowToStructByName[row])
		require.NoError(t, err)
		return len(rows) == 2 && rows[0].Status == "cancelled"
	}, 30*time.Second, 50*time.Millisecond, "both orders projected, the first cancelled")
	require.Equal(t, a, rows[0].OrderID)
	require.Equal(t, int64(1250), rows[0].Amount)
	require.Equal(t, "usd", rows[0].Currency)
	require.True(t, rows[0].CreatedAt.Equal(occurred))
	require.NotNil(t, rows[0].CancelledAt)
	require.Equal(t, int64(2), rows[0].Sequence)
	require.Equal(t, int64(2), rows[0].Applied, "the created event published twice is applied once")
	require.Equal(t, row{OrderID: b, Status: "created", Amount: 990, Currency: "eur", CreatedAt: rows[1].CreatedAt, Sequence: 1, Applied: 1}, rows[1])
}

// TestFeedDecryptsTheStream: events the starter's codec encrypted on their
// way to the stream (the customer's email in none of the stored messages)
// are not applied by a consumer without the keys (logged, delivered again),
// and are projected by the feed given the keys, as plain events are.
func TestFeedDecryptsTheStream(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, _ := testdb.New(t)
	_, err := qSchema.Exec(ctx, pool, namedsql.NoRows{})
	require.NoError(t, err)
	keys, err := codec.ParseKeys(codec.NewKeySpec("k1"))
	require.NoError(t, err)
	nc, err := nats.Connect(nats.DefaultURL)
	require.NoError(t, err, "the test needs NATS with JetStream at %s", nats.DefaultURL)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	id := strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	stream, prefix := "ORDERFEED_"+strings.ToUpper(id), "orderfeed"+id
	enc := natscodec.New(codec.NewDataConverter(keys, codec.Options{Store: codec.NewPGStore(pool)}))
	pub, err := natspub.New(ctx, js, natspub.Config{Stream: stream, SubjectPrefix: prefix, CreateStream: true, Encoder: enc})
	require.NoError(t, err)
	defer func() { require.NoError(t, js.DeleteStream(context.Background(), stream)) }()

	a := uuid.NewString()
	created, err := outbox.NewEvent(orders.AggregateType, a, orders.EventOrderCreated, 1, orders.OrderCreated{
		OrderID: a, CustomerEmail: "grace@example.com", Currency: "usd", Amount: 4200})
	require.NoError(t, err)
	created.ID, created.Sequence, created.OccurredAt = uuid.New(), 1, time.Now().UTC()
	require.NoError(t, pub.Publish(ctx, created))
	s, err := js.Stream(ctx, stream)
	require.NoError(t, err)
	raw, err := s.GetMsg(ctx, 1)
	require.NoError(t, err)
	require.NotContains(t, string(raw.Data), "grace@example.com", "the stream holds the payload encrypted")

	ib, err := inbox.New(nil)
	require.NoError(t, err)
	run := func(name string, dec natspub.PayloadDecoder, logs *testlog.SyncBuffer) func() {
		c, err := natsconsumer.New(ctx, js, pool, natsconsumer.Config{Name: name, Stream: stream, FilterSubject: prefix + ".order.>",
			Inbox: ib, Positions: feed{}, Apply: feed{}.apply, Decoder: dec, FetchWait: 200 * time.Millisecond,
			RetryDelay: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		require.NoError(t, err)
		rctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- c.Run(rctx) }()
		return func() { stop(); require.NoError(t, <-done) }
	}
	var without testlog.SyncBuffer
	stop := run("orderfeed-nokeys", nil, &without)
	require.Eventually(t, func() bool { return strings.Count(without.String(), "Config.Decoder is nil") >= 2 },
		30*time.Second, 50*time.Millisecond, "refused, and delivered again")
	stop()
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM order_feed`).Scan(&n))
	require.Zero(t, n, "nothing applied without the keys")

	// A forgotten customer's order: its OrderCreated, under the customer's
	// key, is erased before the feed reads it; its cancel, under the master
	// key, follows.
	b := uuid.NewString()
	bCreated, err := outbox.NewEvent(orders.AggregateType, b, orders.EventOrderCreated, 1, orders.OrderCreated{
		OrderID: b, CustomerEmail: "erin@example.com", Currency: "eur", Amount: 990})
	require.NoError(t, err)
	bCreated.ID, bCreated.Sequence, bCreated.OccurredAt = uuid.New(), 1, time.Now().UTC()
	require.NoError(t, pub.Publish(ctx, bCreated))
	_, err = codec.Forget(ctx, pool, "erin@example.com", "test", "the feed reads an erased payload")
	require.NoError(t, err)
	bCancelled, err := outbox.NewEvent(orders.AggregateType, b, orders.EventOrderCancelled, 1, orders.OrderCancelled{OrderID: b, CreatedEventID: bCreated.ID.String()})
	require.NoError(t, err)
	bCancelled.ID, bCancelled.Sequence, bCancelled.OccurredAt = uuid.New(), 2, time.Now().UTC()
	require.NoError(t, pub.Publish(ctx, bCancelled))

	var logs testlog.SyncBuffer
	defer run(consumerName, payloadDecoder(keys, pool), &logs)()
	require.Eventually(t, func() bool {
		var amount int64
		var currency string
		err := pool.QueryRow(ctx, `SELECT amount, currency FROM order_feed WHERE order_id = $1`, a).Scan(&amount, &currency)
		return err == nil && amount == 4200 && currency == "usd"
	}, 30*time.Second, 50*time.Millisecond, "projected from the decrypted payload; logs:\n%s", &logs)
	require.Eventually(t, func() bool {
		var status string
		var amount *int64
		var seq, applied int64
		err := pool.QueryRow(ctx, `SELECT status, amount, last_sequence, events_applied FROM order_feed WHERE order_id = $1`, b).
			Scan(&status, &amount, &seq, &applied)
		return err == nil && status == "cancelled" && amount == nil && seq == 2 && applied == 2
	}, 30*time.Second, 50*time.Millisecond, "the forgotten customer's order: created without its payload, then cancelled; logs:\n%s", &logs)
	require.Contains(t, logs.String(), "the payload's key was erased")
}
