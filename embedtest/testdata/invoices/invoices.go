// Package invoices is a billing service that adopted outflow's outbox: an
// invoice and its InvoiceIssued event commit in one transaction, a relay
// starts one InvoiceWorkflow per event, and the workflow's consumer posts
// the invoice to the ledger once, however often the event is delivered.
package invoices

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox"
)

// The outbox names of this service's events.
const (
	AggregateType = "invoice"
	EventIssued   = "InvoiceIssued"
)

// Invoice is one row of the invoices table.
type Invoice struct {
	ID          string
	Customer    string
	AmountCents int64
}

// Issued is the payload of an InvoiceIssued event, schema version 1.
type Issued struct {
	InvoiceID   string `json:"invoice_id"`
	Customer    string `json:"customer"`
	AmountCents int64  `json:"amount_cents"`
}

// IssueTx writes an invoice and its InvoiceIssued event in tx, the caller's
// transaction: both commit, or neither does.
func IssueTx(ctx context.Context, tx pgx.Tx, customer string, amountCents int64) (Invoice, outbox.Event, error) {
	inv := Invoice{ID: uuid.NewString(), Customer: customer, AmountCents: amountCents}
	_, err := tx.Exec(ctx, `INSERT INTO invoices (id, customer, amount_cents) VALUES ($1, $2, $3)`,
		inv.ID, inv.Customer, inv.AmountCents)
	if err != nil {
		return Invoice{}, outbox.Event{}, fmt.Errorf("insert invoice: %w", err)
	}
	ev, err := outbox.NewEvent(AggregateType, inv.ID, EventIssued, 1,
		Issued{InvoiceID: inv.ID, Customer: inv.Customer, AmountCents: inv.AmountCents})
	if err != nil {
		return Invoice{}, outbox.Event{}, err
	}
	enqueued, err := outbox.Enqueue(ctx, tx, ev)
	if err != nil {
		return Invoice{}, outbox.Event{}, err
	}
	return inv, enqueued[0], nil
}

// Issue is IssueTx in a transaction of its own.
func Issue(ctx context.Context, db *pgxpool.Pool, customer string, amountCents int64) (inv Invoice, ev outbox.Event, err error) {
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		inv, ev, err = IssueTx(ctx, tx, customer, amountCents)
		return err
	})
	return inv, ev, err
}
