package testsuite

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
)

// PoisonAggregateType is the aggregate type of the poison events the chaos
// soak enqueues: no order has it, so invariant 2 and the order checks never
// see them, and the soak's operator may skip exactly these.
const PoisonAggregateType = "soak_poison"

// PoisonShape is what one poison aggregate holds, in sequence.
type PoisonShape int

const (
	// PoisonUnroutable: one event of a type with no route
	// ("ParcelTeleported").
	PoisonUnroutable PoisonShape = iota
	// PoisonUnroutableInvalid: an unroutable event, then an OrderCreated
	// whose payload fails validation.
	PoisonUnroutableInvalid
	// PoisonOversized: one routed event larger than the sink takes.
	PoisonOversized
	// PoisonOversizedThenLate: an oversized event, then a deliverable one
	// (a late webhook, see [harmlessWebhook]).
	PoisonOversizedThenLate
	// PoisonUnroutableThenLate: an unroutable event, then a deliverable one.
	PoisonUnroutableThenLate
	poisonShapes
)

// Sizes of the oversized poison events' payloads. Both stay below
// outbox.MaxPayloadBytesDefault, so Enqueue takes them.
const (
	// The stack's codec compresses a payload before it encrypts it; the
	// ballast is base64 of random bytes, which it brings down to about
	// three quarters (measured: 1.6 MiB to 1.18 MiB, 6 MiB to 4.52 MiB), in
	// a workflow's input and in a stream message alike.

	// TemporalOversizedBytes is above every limit of Temporal's once
	// compressed: the frontend's 4 MiB gRPC message and the 2 MiB blob
	// limit.
	TemporalOversizedBytes = 6 << 20
	// JetStreamOversizedBytes is above the NATS server's max_payload
	// (1 MiB by default) once compressed, and below Temporal's 2 MiB blob
	// limit: with both sinks Temporal takes it (Temporal comes first) and
	// the stream refuses it.
	JetStreamOversizedBytes = 1600 << 10
)

// Poisoned is one poison aggregate committed.
type Poisoned struct {
	Aggregate string
	Shape     PoisonShape
	// Events is how many events it holds; Later how many of them are
	// deliverable (each after a poison event, so it waits for its skip).
	Events, Later int
}

// Oversized reports whether the aggregate's first event is an oversized
// one.
func (p Poisoned) Oversized() bool {
	return p.Shape == PoisonOversized || p.Shape == PoisonOversizedThenLate
}

// EnqueuePoison commits one poison aggregate of the given shape, whose
// poison events a relay quarantines at their first attempt, as a bad
// deploy's events would be: an unroutable type, a payload that fails
// validation, or a routed event of oversized bytes that its sink refuses
// for its size (the event's fault). A deliverable event behind a poison one
// waits until an operator skips it. Only the first event is claimable; the
// next waits behind it. It rides out lost connections (a commit whose answer
// was lost may have written the aggregate; the operator finds poison events
// by their aggregate type). On a log stack (Source "log") they go to the
// log, as the stack's producers' do: there the first one's failure makes its
// aggregate's hold, quarantined, and the hold owns the next.
func EnqueuePoison(ctx context.Context, s *Stack, shape PoisonShape, oversized int) (Poisoned, error) {
	agg := uuid.NewString()
	events, err := poisonEvents(agg, shape, oversized)
	if err != nil {
		return Poisoned{}, err
	}
	p := Poisoned{Aggregate: agg, Shape: shape, Events: len(events)}
	if shape == PoisonOversizedThenLate || shape == PoisonUnroutableThenLate {
		p.Later = 1
	}
	deadline := time.Now().Add(time.Minute)
	for {
		err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
			if exists, err := qPoisonExists.Value(ctx, tx, aggregateArgs{AggregateType: PoisonAggregateType, AggregateID: agg}); err != nil || exists {
				return err
			}
			return enqueuePoisonTx(ctx, tx, s, events)
		})
		if err == nil {
			return p, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return p, fmt.Errorf("enqueue poison aggregate %s: %w", agg, err)
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// poisonEvents are the events of the poison aggregate agg of the shape;
// oversized is the size of an oversized event's payload.
func poisonEvents(agg string, shape PoisonShape, oversized int) ([]outbox.Event, error) {
	unroutable := func() (outbox.Event, error) {
		return outbox.NewEvent(PoisonAggregateType, agg, "ParcelTeleported", 1, map[string]string{"parcel": agg})
	}
	var makers []func() (outbox.Event, error)
	switch shape {
	case PoisonUnroutable:
		makers = append(makers, unroutable)
	case PoisonUnroutableInvalid:
		makers = append(makers, unroutable, func() (outbox.Event, error) {
			return outbox.NewEvent(PoisonAggregateType, agg, orders.EventOrderCreated, 1, map[string]string{"order_id": agg})
		})
	case PoisonOversized, PoisonOversizedThenLate:
		makers = append(makers, func() (outbox.Event, error) { return oversizedWebhook(agg, oversized) })
	case PoisonUnroutableThenLate:
		makers = append(makers, unroutable)
	default:
		return nil, fmt.Errorf("poison shape %d is unknown", shape)
	}
	if shape == PoisonOversizedThenLate || shape == PoisonUnroutableThenLate {
		makers = append(makers, func() (outbox.Event, error) {
			return outbox.NewEvent(PoisonAggregateType, agg, orders.EventPaymentWebhookReceived, orders.PaymentWebhookReceivedVersion, harmlessWebhook(agg))
		})
	}
	var events []outbox.Event
	for _, m := range makers {
		e, err := m()
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	return events, nil
}

// harmlessWebhook is a routed event whose delivery does no business: a
// Stripe payment_intent.succeeded webhook for a payment saga that never
// existed (a fresh id). Its route signals the saga, which Temporal answers
// NotFound, so the relay starts PaymentWebhookLateWorkflow for it (workflow
// ID the event's), which records it and completes: no charge, no order
// touched (its order id, the poison aggregate's, is no order), no incident
// (neither a dispute nor a failed refund).
func harmlessWebhook(agg string) orders.PaymentWebhookReceived {
	return orders.PaymentWebhookReceived{
		StripeEventID:  "evt_soak_" + uuid.NewString()[:8],
		Type:           "payment_intent.succeeded",
		Created:        time.Now().Unix(),
		OrderID:        agg,
		SagaWorkflowID: uuid.NewString(),
		ObjectID:       "pi_soak_" + uuid.NewString()[:8],
		ObjectType:     "payment_intent",
		Status:         "succeeded",
	}
}

// oversizedWebhook is [harmlessWebhook] with a ballast of random text that
// makes its payload size bytes: its sink refuses it for its size, and were
// it ever delivered it would do no more than the harmless webhook. Random,
// so the codec's compression cannot bring it under a limit.
func oversizedWebhook(agg string, size int) (outbox.Event, error) {
	raw := make([]byte, size*3/4)
	if _, err := rand.Read(raw); err != nil {
		return outbox.Event{}, err
	}
	return outbox.NewEvent(PoisonAggregateType, agg, orders.EventPaymentWebhookReceived, orders.PaymentWebhookReceivedVersion, struct {
		orders.PaymentWebhookReceived
		Ballast string `json:"soak_ballast"`
	}{harmlessWebhook(agg), base64.StdEncoding.EncodeToString(raw)})
}

// enqueuePoisonTx enqueues poison events in tx, to the log on a log stack.
func enqueuePoisonTx(ctx context.Context, tx pgx.Tx, s *Stack, events []outbox.Event) error {
	_, err := outbox.NewEnqueuer(outbox.EnqueueConfig{Log: s.Source == "log"}).Enqueue(ctx, tx, events...)
	return err
}
