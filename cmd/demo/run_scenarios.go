package main

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/providersim"
)

// finalStatuses are the order statuses nothing moves on from.
var finalStatuses = []string{"confirmed", "payment_failed", "cancelled"}

// runScenarios places every scripted order and gathers what became of it.
// db is the demo's database, where the order API records the webhooks'
// events.
func runScenarios(ctx context.Context, api *orderAPI, inv *inventoryAPI, sim *providersim.Client, db outbox.LookupDB, tmp *temporalServer) ([]result, error) {
	all := scenarios()
	results := make([]result, len(all))
	// Each order's span ends when the order reaches its final state.
	spans := make([]trace.Span, len(all))
	defer func() {
		for _, sp := range spans {
			if sp != nil {
				sp.End()
			}
		}
	}()
	// Faults hit "the next N calls" of an operation, so a faulted scenario
	// runs alone until the simulator has recorded its charge; holding the
	// simulator's webhooks holds everyone's, so that scenario runs alone
	// too.
	var concurrent []int
	for i, sc := range all {
		if sc.webhook == webhookTwiceReordered {
			sctx, span := orderSpan(ctx, sc)
			spans[i] = span
			r, err := twiceReordered(sctx, api, sim, sc, i)
			if err != nil {
				return nil, err
			}
			results[i] = r
			continue
		}
		if sc.fault == "" {
			concurrent = append(concurrent, i)
			continue
		}
		say("placing %q: injecting %s into the next charge", sc.name, sc.fault)
		if err := sim.InjectFault(ctx, providersim.Fault{Operation: "payment_intents.create", Fault: sc.fault, Count: 1}); err != nil {
			return nil, fmt.Errorf("inject fault: %w", err)
		}
		sctx, span := orderSpan(ctx, sc)
		spans[i] = span
		o, err := api.create(sctx, newKey(sc.name), fmt.Sprintf("customer%d@example.com", i+1), sc.paymentMethod, sc.orderItems())
		if err != nil {
			return nil, err
		}
		results[i] = result{orderID: o.OrderID, scenario: sc}
		if _, err := waitCharged(ctx, sim, o.OrderID, 60*time.Second); err != nil {
			return nil, err
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(all))
	for _, i := range concurrent {
		sc := all[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			say("placing %q", sc.name)
			sctx, span := orderSpan(ctx, sc)
			spans[i] = span
			o, err := api.create(sctx, newKey(sc.name), fmt.Sprintf("customer%d@example.com", i+1), sc.paymentMethod, sc.orderItems())
			if err != nil {
				errs[i] = err
				return
			}
			results[i] = result{orderID: o.OrderID, scenario: sc}
			if sc.webhook == webhookSettle {
				// The payment stays processing: play the bank settling it.
				// Its signed webhook is what confirms the order.
				piID, err := waitCharged(ctx, sim, o.OrderID, 2*time.Minute)
				if err != nil {
					errs[i] = err
					return
				}
				before, err := api.get(ctx, o.OrderID)
				if err != nil {
					errs[i] = err
					return
				}
				results[i].beforeWebhook = before.Status
				say("%q: the payment is processing, the order %s; settling it at the provider, whose webhook tells the order API", sc.name, before.Status)
				errs[i] = sim.Settle(ctx, piID, providersim.OutcomeSucceeded)
				return
			}
			switch sc.cancel {
			case cancelRacing:
				errs[i] = api.cancel(sctx, o.OrderID)
			case cancelLate:
				if _, err := api.waitStatus(ctx, o.OrderID, 2*time.Minute, "confirmed"); err != nil {
					errs[i] = err
					return
				}
				errs[i] = api.cancel(sctx, o.OrderID)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	say("waiting for every order to reach its final state...")
	for i := range results {
		r := &results[i]
		want := finalStatuses
		if r.scenario.cancel != noCancel {
			want = []string{"cancelled"}
		}
		view, err := api.waitStatus(ctx, r.orderID, 3*time.Minute, want...)
		if err != nil {
			say("%v", err)
		}
		if sp := spans[i]; sp != nil {
			if sc := sp.SpanContext(); sc.IsValid() {
				r.traceID = sc.TraceID().String()
			}
			sp.End()
		}
		for _, e := range view.Events {
			link := workflowLink{eventType: e.EventType}
			if e.WorkflowID != nil {
				link.workflowID = *e.WorkflowID
				if tmp.uiURL != "" {
					link.url = fmt.Sprintf("%s/namespaces/%s/workflows/%s", tmp.uiURL, url.PathEscape(tmp.namespace), url.PathEscape(*e.WorkflowID))
				}
			}
			r.workflows = append(r.workflows, link)
		}
	}
	// Effects may trail the status by a step (the last email), so give the
	// ledger a bounded while to settle before judging.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ledger, err := sim.Ledger(ctx)
		if err != nil {
			return nil, err
		}
		hooks, err := sim.Webhooks(ctx)
		if err != nil {
			return nil, err
		}
		pending := false
		for i := range results {
			r := &results[i]
			view, err := api.get(ctx, r.orderID)
			if err != nil {
				return nil, err
			}
			r.observed = observe(ledger, r.orderID, view.Status)
			r.observed.beforeWebhook = r.beforeWebhook
			r.observed.webhooks = deliveredWebhooks(ledger, hooks, r.orderID)
			if r.observed.stock, err = inv.reservation(ctx, r.orderID); err != nil {
				return nil, err
			}
			events, err := outbox.AggregateEvents(ctx, db, orders.AggregatePayment, r.orderID)
			if err != nil {
				return nil, err
			}
			for _, e := range events {
				if e.Type == orders.EventPaymentWebhookReceived {
					r.observed.recorded++
				}
			}
			r.mismatch = r.scenario.expect.check(r.observed)
			pending = pending || r.mismatch != ""
		}
		if !pending || time.Now().After(deadline) {
			return results, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// observe extracts one order's effects from the provider's ledger.
func observe(l providersim.Ledger, orderID, status string) observed {
	o := observed{status: status}
	keys := map[string]int{}
	intents := map[string]bool{}
	for _, pi := range l.PaymentIntents {
		if pi.Metadata["order_id"] != orderID {
			continue
		}
		o.paymentIntents++
		intents[pi.ID] = true
		keys[pi.IdempotencyKey]++
		if pi.Status == "succeeded" {
			o.charges++
		}
	}
	for _, rf := range l.Refunds {
		if intents[rf.PaymentIntent] {
			keys[rf.IdempotencyKey]++
			if rf.Status == "succeeded" {
				o.refunds++
			}
		}
	}
	for _, e := range l.Emails {
		if e.Tags["order_id"] == orderID {
			keys[e.IdempotencyKey]++
			o.emails = append(o.emails, e.Tags["kind"])
		}
	}
	for k, n := range keys {
		if k != "" && n > 1 {
			o.duplicateEffects += n - 1
		}
	}
	return o
}

// twiceReordered places the scenario's order with the simulator's webhooks
// held, settles its processing payment, releases the held deliveries
// newest first (payment_intent.succeeded before the older
// payment_intent.processing) and then delivers the succeeded event once
// more, as Stripe may: three deliveries of two events.
func twiceReordered(ctx context.Context, api *orderAPI, sim *providersim.Client, sc scenario, i int) (result, error) {
	say("placing %q: holding the provider's webhooks", sc.name)
	if err := sim.HoldWebhooks(ctx); err != nil {
		return result{}, fmt.Errorf("hold webhooks: %w", err)
	}
	released := false
	defer func() {
		if !released {
			_ = sim.ReleaseWebhooks(context.WithoutCancel(ctx))
		}
	}()
	o, err := api.create(ctx, newKey(sc.name), fmt.Sprintf("customer%d@example.com", i+1), sc.paymentMethod, sc.orderItems())
	if err != nil {
		return result{}, err
	}
	r := result{orderID: o.OrderID, scenario: sc}
	piID, err := waitCharged(ctx, sim, o.OrderID, 2*time.Minute)
	if err != nil {
		return result{}, err
	}
	before, err := api.get(ctx, o.OrderID)
	if err != nil {
		return result{}, err
	}
	r.beforeWebhook = before.Status
	if err := sim.Settle(ctx, piID, providersim.OutcomeSucceeded); err != nil {
		return result{}, fmt.Errorf("settle %s: %w", piID, err)
	}
	if err := sim.ReleaseWebhooks(ctx); err != nil {
		return result{}, fmt.Errorf("release webhooks: %w", err)
	}
	released = true
	hooks, err := sim.Webhooks(ctx)
	if err != nil {
		return result{}, err
	}
	for _, h := range hooks {
		if h.ObjectID == piID && h.Type == providersim.EventPaymentIntentSucceeded {
			say("%q: the order %s; its webhooks released newest first, then %s (%s) delivered again", sc.name, before.Status, h.EventID, h.Type)
			if err := sim.ResendWebhook(ctx, h.EventID); err != nil {
				return result{}, fmt.Errorf("resend webhook %s: %w", h.EventID, err)
			}
			return r, nil
		}
	}
	return result{}, fmt.Errorf("order %s: no payment_intent.succeeded webhook for %s after settling it", o.OrderID, piID)
}

// deliveredWebhooks counts the webhook deliveries answered 2xx about the
// order's payment: its payment intents' events and their refunds'.
func deliveredWebhooks(l providersim.Ledger, hooks []providersim.WebhookDelivery, orderID string) int {
	objects := map[string]bool{}
	for _, pi := range l.PaymentIntents {
		if pi.Metadata["order_id"] == orderID {
			objects[pi.ID] = true
		}
	}
	for _, rf := range l.Refunds {
		if objects[rf.PaymentIntent] {
			objects[rf.ID] = true
		}
	}
	n := 0
	for _, h := range hooks {
		if h.Delivered && objects[h.ObjectID] {
			n++
		}
	}
	return n
}

// waitCharged waits until the simulator holds a payment intent for the
// order and returns its id.
func waitCharged(ctx context.Context, sim *providersim.Client, orderID string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		l, err := sim.Ledger(ctx)
		if err == nil {
			for _, pi := range l.PaymentIntents {
				if pi.Metadata["order_id"] == orderID {
					return pi.ID, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("order %s: no charge reached the simulator within %s (is the worker running? see .data/logs/worker.log)", orderID, timeout)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
