package outbox_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox"
)

// An invoice's two events written in the transaction of the business change
// they describe: they exist if and only if it commits, with consecutive
// sequence numbers in their aggregate's lane.
func ExampleEnqueue() {
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
		// The business change goes here, in tx: INSERT INTO invoices ...
		issued, err := outbox.NewEvent("invoice", "inv-1", "InvoiceIssued", 1, map[string]any{"amount_cents": 12500})
		if err != nil {
			return err
		}
		sent, err := outbox.NewEvent("invoice", "inv-1", "InvoiceSent", 1, map[string]any{"to": "billing@example.com"})
		if err != nil {
			return err
		}
		events, err := outbox.Enqueue(ctx, tx, issued, sent)
		for _, e := range events {
			fmt.Println(e.AggregateType, e.AggregateID, e.Sequence, e.Type)
		}
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// invoice inv-1 1 InvoiceIssued
	// invoice inv-1 2 InvoiceSent
}
