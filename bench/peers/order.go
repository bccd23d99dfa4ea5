package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/internal/bench/benchdb"
	"github.com/outflow/outflow/orders"
)

// newOrder queues the order row of benchOrder on a new batch, with the
// statement orders.CreateOrderTx sends (orders.SQL("InsertOrder")), and
// returns its OrderCreated event, sequence 1 of the new order.
func newOrder() (*pgx.Batch, Event, error) {
	p, amount, err := benchdb.Order().Validate()
	if err != nil {
		return nil, Event{}, err
	}
	order, err := uuid.NewV7()
	if err != nil {
		return nil, Event{}, err
	}
	event, err := uuid.NewV7()
	if err != nil {
		return nil, Event{}, err
	}
	items, err := json.Marshal(p.Items)
	if err != nil {
		return nil, Event{}, err
	}
	payload, err := orderCreatedPayload(order.String())
	if err != nil {
		return nil, Event{}, err
	}
	b := &pgx.Batch{}
	b.Queue(orders.SQL("InsertOrder"), pgx.StrictNamedArgs{
		"id": order, "customer_email": p.CustomerEmail, "currency": p.Currency, "payment_method": p.PaymentMethod,
		"amount": amount, "items": items, "created_event_id": event,
	}).QueryRow(func(row pgx.Row) error { var s orders.Status; return row.Scan(&s) })
	return b, Event{ID: event, OrderID: order.String(), Seq: 1, Payload: payload}, nil
}

// orderCreatedPayload is benchOrder's OrderCreated body for order id, in the
// version (v1) that orders.CreateOrderTx writes for an order without a
// shipping address.
func orderCreatedPayload(id string) (json.RawMessage, error) {
	p, amount, err := benchdb.Order().Validate()
	if err != nil {
		return nil, err
	}
	version, body := orders.EncodeOrderCreated(orders.OrderCreated{
		OrderID: id, CustomerEmail: p.CustomerEmail, Currency: p.Currency,
		PaymentMethod: p.PaymentMethod, Amount: amount, Items: p.Items,
	})
	if version != orders.OrderCreatedV1 {
		return nil, fmt.Errorf("bench order encodes as OrderCreated v%d, want v1", version)
	}
	return json.Marshal(body)
}

// backlog is n events over m orders, n/m each (the first n mod m orders get
// one more), in the order a live producer would commit them, each order's in
// sequence: with a seed, the orders' events interleaved at random (the same
// layout for the same seed, so every contender of a round gets it); with
// seed 0, round robin (every order's first event, then every order's
// second, ...), the layout cmd/bench seeds.
func backlog(n, m int, seed uint64) ([]Event, error) {
	ids := make([]string, m)
	payloads := make([]json.RawMessage, m)
	for i := range ids {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, err
		}
		ids[i] = id.String()
		if payloads[i], err = orderCreatedPayload(ids[i]); err != nil {
			return nil, err
		}
	}
	slots := make([]int, n)
	for i := range slots {
		slots[i] = i % m
	}
	if seed != 0 {
		rng := rand.New(rand.NewPCG(seed, seed))
		rng.Shuffle(n, func(i, j int) { slots[i], slots[j] = slots[j], slots[i] })
	}
	next := make([]int64, m)
	events := make([]Event, n)
	for i, o := range slots {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, err
		}
		next[o]++
		events[i] = Event{ID: id, OrderID: ids[o], Seq: next[o], Payload: payloads[o]}
	}
	return events, nil
}
