package invoices

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/outbox/inbox"
)

// LedgerConsumer is the inbox's name for the ledger posting: one name per
// effect, never changed (it is part of the inbox's key).
const LedgerConsumer = "invoices.ledger"

// Activities are the workflow's steps, with the clients they use.
type Activities struct {
	DB    *pgxpool.Pool
	Inbox *inbox.Inbox
}

// LedgerEntry is what PostToLedger posts, and for which event.
type LedgerEntry struct {
	EventID     string
	InvoiceID   string
	AmountCents int64
}

// PostToLedger writes the invoice's ledger entry and the event's inbox row
// in one transaction. A second delivery of the same event (the relay
// delivers at least once, Temporal retries activities) finds the row and
// writes nothing; it reports whether this delivery was the first.
func (a *Activities) PostToLedger(ctx context.Context, e LedgerEntry) (bool, error) {
	eventID, err := uuid.Parse(e.EventID)
	if err != nil {
		return false, temporal.NewNonRetryableApplicationError("bad event id", "BadEventID", err)
	}
	var first bool
	err = pgx.BeginFunc(ctx, a.DB, func(tx pgx.Tx) error {
		if first, err = a.Inbox.Record(ctx, tx, LedgerConsumer, eventID); err != nil || !first {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO ledger_entries (invoice_id, amount_cents) VALUES ($1, $2)`,
			e.InvoiceID, e.AmountCents)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("post invoice %s: %w", e.InvoiceID, err)
	}
	return first, nil
}
