package outboxtest_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
)

// A test of a service's write path asserts what its transaction enqueued,
// inside the transaction before it commits, and that a rolled-back one
// left nothing. This is the body of a test function: t is its *testing.T,
// db its database, migrated with outbox.Migrate. (It needs a test's t, so
// it is compiled, not run; the invoices service of docs/embedding.md runs
// the same assertions.)
func ExampleRequireEnqueued() {
	var (
		t  *testing.T
		db *pgxpool.Pool
	)
	ctx := context.Background()
	tx, err := db.Begin(ctx)
	require.NoError(t, err)
	ev, err := outbox.NewEvent("invoice", "inv-7", "InvoiceIssued", 1, map[string]any{"amount_cents": 990})
	require.NoError(t, err)
	_, err = outbox.Enqueue(ctx, tx, ev)
	require.NoError(t, err)

	got := outboxtest.RequireEnqueued(t, tx, outboxtest.Match{AggregateType: "invoice", AggregateID: "inv-7", Type: "InvoiceIssued"})
	require.JSONEq(t, `{"amount_cents": 990}`, string(got.Payload))

	require.NoError(t, tx.Rollback(ctx))
	outboxtest.RequireNotEnqueued(t, db, outboxtest.Match{AggregateType: "invoice", AggregateID: "inv-7"})
}

// A real relay publishing to a Recorder instead of Temporal: what a
// service's events look like to its publisher, without a Temporal server.
// (In a test, RunRelay runs the relay and Recorder.Wait waits for it.)
func ExampleRecorder() {
	ctx := context.Background()
	db, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := outbox.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		ev, err := outbox.NewEvent("invoice", "inv-9", "InvoiceIssued", 1, map[string]any{"amount_cents": 4200})
		if err != nil {
			return err
		}
		_, err = outbox.Enqueue(ctx, tx, ev)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	published := make(chan struct{})
	var once sync.Once
	rec := &outboxtest.Recorder{Answer: func(context.Context, outbox.Event) error {
		once.Do(func() { close(published) })
		return nil // acknowledge
	}}
	relay, err := outbox.NewRelay(db, rec, outbox.RelayConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	relayCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relay.Run(relayCtx) }()
	<-published
	stop()
	if err := <-done; err != nil { // Run returns once its publishes are recorded and marked
		log.Fatal(err)
	}
	for _, e := range rec.Events() {
		fmt.Println(e.Type, e.AggregateID, e.Sequence)
	}
	// Output:
	// InvoiceIssued inv-9 1
}
