package outboxops_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
)

// An operator gives up an event no consumer will ever take: the relay
// quarantined it (its publisher refused it permanently), status counts it,
// list shows why, and the skip records who decided and why, after which the
// aggregate's later events flow again. cmd/outboxctl's status, list and skip
// are these calls.
func ExampleSkip() {
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
		ev, err := outbox.NewEvent("invoice", "inv-3", "InvoiceVoided", 1, map[string]any{"reason": "duplicate"})
		if err != nil {
			return err
		}
		_, err = outbox.Enqueue(ctx, tx, ev)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	// A relay whose publisher has no workflow for InvoiceVoided.
	refused := make(chan struct{})
	var once sync.Once
	pub := outbox.PublisherFunc(func(ctx context.Context, e outbox.Event) error {
		once.Do(func() { close(refused) })
		return outbox.Permanent(errors.New("no workflow takes " + e.Type))
	})
	relay, err := outbox.NewRelay(db, pub, outbox.RelayConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	relayCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relay.Run(relayCtx) }()
	<-refused
	stop()
	if err := <-done; err != nil { // Run returns once its failures are recorded
		log.Fatal(err)
	}

	st, err := outboxops.Status(ctx, db)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("quarantined:", st.Quarantined)
	held, err := outboxops.List(ctx, db, outboxops.ListOptions{Quarantined: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range held {
		fmt.Println(e.Type, e.AggregateID, e.State, e.LastError)
	}
	c, err := outboxops.Skip(ctx, db, held[0].ID, "voided by hand in the ledger, ticket OPS-7", "ada@ops")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Before.State, "->", c.After.State, "by", c.After.SkippedBy)
	// Output:
	// quarantined: 1
	// InvoiceVoided inv-3 quarantined outbox: permanent publish error: no workflow takes InvoiceVoided
	// quarantined -> skipped by ada@ops
}
