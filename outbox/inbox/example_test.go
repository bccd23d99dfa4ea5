package inbox_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/inbox"
)

// A consumer whose effect is in the database records the event in the
// effect's own transaction and applies the effect only the first time: the
// second delivery of the same event is told it is a duplicate.
func ExampleInbox_Record() {
	ctx := context.Background()
	db, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := outbox.Migrate(ctx, db); err != nil { // processed_events is part of the outbox's schema
		log.Fatal(err)
	}
	ib, err := inbox.New(prometheus.NewRegistry())
	if err != nil {
		log.Fatal(err)
	}

	eventID := uuid.New() // the delivered event's ID (temporalpub.EventInput.EventID)
	for delivery := 1; delivery <= 2; delivery++ {
		err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			first, err := ib.Record(ctx, tx, "invoices.ledger", eventID)
			if err != nil {
				return err
			}
			fmt.Printf("delivery %d: first=%t\n", delivery, first)
			if !first {
				return nil // applied by an earlier delivery: acknowledge without effect
			}
			// The effect goes here, in tx: INSERT INTO ledger_entries ...
			return nil
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// delivery 1: first=true
	// delivery 2: first=false
}
