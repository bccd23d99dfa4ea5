package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/inbox"
)

// The payment provider's webhooks, taken in by the order API
// (POST /webhooks/stripe) once their signature is verified: each Stripe
// event is recorded once, in one transaction, as the inbox row of its
// Stripe event id and an outbox event PaymentWebhookReceived, which the
// relay delivers to the order's payment saga as a signal.
const (
	// EventPaymentWebhookReceived is the outbox event of one webhook.
	EventPaymentWebhookReceived = "PaymentWebhookReceived"
	// PaymentWebhookReceivedVersion is its payload's schema version.
	PaymentWebhookReceivedVersion = 1
	// AggregatePayment is the aggregate of the webhooks' events: the
	// order's payment, a stream of its own beside the order's (whose
	// sequence the order projection follows), with the order's id, so one
	// order's webhooks reach its saga in the order they were recorded.
	AggregatePayment = "payment"
	// WebhookConsumer is the inbox consumer of the webhooks: the same
	// Stripe event delivered again (Stripe delivers at least once, and
	// retries for days) is recognised by it and writes nothing.
	WebhookConsumer = "stripe.webhook"
)

// PaymentWebhookReceived is the payload of [EventPaymentWebhookReceived]:
// what a saga needs of the Stripe event, never the customer's personal
// data (no billing details, no email): ids, status, amounts and the
// provider's codes.
type PaymentWebhookReceived struct {
	// StripeEventID is the Stripe event's id (evt_...).
	StripeEventID string `json:"stripe_event_id"`
	// Type is the Stripe event's type, e.g. payment_intent.succeeded.
	Type string `json:"type"`
	// Created is when Stripe created the event, in Unix seconds: webhooks
	// come out of order, a saga orders them by it.
	Created int64 `json:"created"`
	// OrderID is the order; SagaWorkflowID its payment saga's workflow id
	// (the OrderCreated event's id), where the signal goes.
	OrderID        string `json:"order_id"`
	SagaWorkflowID string `json:"saga_workflow_id"`
	// Object is the event's object: its id, kind (payment_intent, charge,
	// refund, dispute) and what its kind says of the outcome.
	ObjectID        string `json:"object_id"`
	ObjectType      string `json:"object_type"`
	PaymentIntentID string `json:"payment_intent_id,omitempty"`
	Status          string `json:"status,omitempty"`
	Amount          int64  `json:"amount,omitempty"`
	Currency        string `json:"currency,omitempty"`
	// FailureCode is the provider's code of a failure: a PaymentIntent's
	// last_payment_error.code, a refund's failure_reason, a dispute's reason.
	FailureCode string `json:"failure_code,omitempty"`
}

// DecodePaymentWebhookReceived decodes and checks a PaymentWebhookReceived
// payload of schema version v.
func DecodePaymentWebhookReceived(v int, payload []byte) (PaymentWebhookReceived, error) {
	var w PaymentWebhookReceived
	if v != PaymentWebhookReceivedVersion {
		return w, fmt.Errorf("orders: PaymentWebhookReceived v%d is unknown (this build reads v%d)", v, PaymentWebhookReceivedVersion)
	}
	if err := json.Unmarshal(payload, &w); err != nil {
		return w, fmt.Errorf("orders: PaymentWebhookReceived: %w", err)
	}
	if w.StripeEventID == "" || w.Type == "" || w.OrderID == "" || w.SagaWorkflowID == "" {
		return w, errors.New("orders: PaymentWebhookReceived needs stripe_event_id, type, order_id and saga_workflow_id")
	}
	return w, nil
}

// Webhook is one verified Stripe event, as the order API parsed it.
type Webhook struct {
	// StripeEventID, Type and Created are the event's.
	StripeEventID string
	Type          string
	Created       int64
	// Object is the event's data.object, as Stripe sent it.
	Object json.RawMessage
}

// WebhookResult is what recording a webhook did.
type WebhookResult struct {
	// Duplicate: this Stripe event was recorded before; nothing written.
	Duplicate bool
	// Unmatched: the event names no order of this service (another
	// integration's PaymentIntent, say); only its inbox row is written, so
	// its redeliveries are recognised too.
	Unmatched bool
	// EventID is the outbox event written, when one was.
	EventID uuid.UUID
}

// webhookNamespace derives the inbox id of a Stripe event id (UUIDv5), so
// the inbox's (consumer, event id) key holds Stripe's own ids.
var webhookNamespace = uuid.MustParse("5c2b8f0e-4b7e-4c52-9d2e-6b1f0a7c9e31")

// WebhookInboxID is the inbox id of the Stripe event stripeEventID.
func WebhookInboxID(stripeEventID string) uuid.UUID {
	return uuid.NewSHA1(webhookNamespace, []byte(stripeEventID))
}

// RecordWebhookTx records w in the caller's transaction through ib: its
// inbox row and, for an event about an order of this service, its
// PaymentWebhookReceived event. The caller answers Stripe with a 2xx only
// after tx committed: a crash before leaves nothing, and Stripe delivers
// again. Of opts, only [WithEnqueuer] applies.
func RecordWebhookTx(ctx context.Context, tx pgx.Tx, ib *inbox.Inbox, w Webhook, opts ...Option) (WebhookResult, error) {
	first, err := ib.Record(ctx, tx, WebhookConsumer, WebhookInboxID(w.StripeEventID))
	if err != nil {
		return WebhookResult{}, fmt.Errorf("orders: inbox of webhook %s: %w", w.StripeEventID, err)
	}
	if !first {
		return WebhookResult{Duplicate: true}, nil
	}
	p, orderID := webhookPayload(w)
	args := webhookOrderArgs{PaymentIntentID: p.PaymentIntentID}
	if id, err := uuid.Parse(orderID); err == nil {
		args.OrderID = &id
	} else if p.PaymentIntentID == "" {
		return WebhookResult{Unmatched: true}, nil
	}
	o, err := qWebhookOrder.One(ctx, tx, args)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return WebhookResult{Unmatched: true}, nil
	case err != nil:
		return WebhookResult{}, fmt.Errorf("orders: find the order of webhook %s: %w", w.StripeEventID, err)
	}
	p.OrderID, p.SagaWorkflowID = o.ID.String(), o.CreatedEventID.String()
	ev, err := outbox.NewEvent(AggregatePayment, p.OrderID, EventPaymentWebhookReceived, PaymentWebhookReceivedVersion, p)
	if err != nil {
		return WebhookResult{}, err
	}
	out, err := collect(opts).enqueuer.Enqueue(ctx, tx, ev)
	if err != nil {
		return WebhookResult{}, fmt.Errorf("orders: enqueue webhook %s of order %s: %w", w.StripeEventID, p.OrderID, err)
	}
	return WebhookResult{EventID: out[0].ID}, nil
}

// webhookObject is what the payload takes of a Stripe object: the fields of
// a PaymentIntent, a charge, a refund and a dispute that say whose it is and
// how it ended.
type webhookObject struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	Status        string            `json:"status"`
	Amount        int64             `json:"amount"`
	Currency      string            `json:"currency"`
	Metadata      map[string]string `json:"metadata"`
	PaymentIntent json.RawMessage   `json:"payment_intent"` // an id, or an expanded object
	FailureReason string            `json:"failure_reason"` // refund
	Reason        string            `json:"reason"`         // dispute
	LastError     *struct {
		Code string `json:"code"`
	} `json:"last_payment_error"` // PaymentIntent
}

// webhookPayload is w's payload but for the order and saga, and the order
// id w's object names in its metadata, if any.
func webhookPayload(w Webhook) (PaymentWebhookReceived, string) {
	var o webhookObject
	_ = json.Unmarshal(w.Object, &o) // a field Stripe left out stays empty
	p := PaymentWebhookReceived{StripeEventID: w.StripeEventID, Type: w.Type, Created: w.Created,
		ObjectID: o.ID, ObjectType: o.Object, Status: o.Status, Amount: o.Amount, Currency: o.Currency}
	switch o.Object {
	case "payment_intent":
		p.PaymentIntentID = o.ID
		if o.LastError != nil {
			p.FailureCode = o.LastError.Code
		}
	default:
		var id string
		if json.Unmarshal(o.PaymentIntent, &id) != nil {
			var expanded struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(o.PaymentIntent, &expanded)
			id = expanded.ID
		}
		p.PaymentIntentID = id
		p.FailureCode = o.FailureReason
		if o.Object == "dispute" {
			p.FailureCode = o.Reason
		}
	}
	return p, o.Metadata["order_id"]
}
