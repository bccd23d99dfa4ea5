package main

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/outflow/outflow/providersim"
)

// finalStatuses are the order statuses nothing moves on from.
var finalStatuses = []string{"confirmed", "payment_failed", "cancelled"}

// runScenarios places every scripted order and gathers what became of it.
func runScenarios(ctx context.Context, api *orderAPI, sim *providersim.Client, tmp *temporalServer) ([]result, error) {
	all := scenarios()
	results := make([]result, len(all))
	// Faults hit "the next N calls" of an operation, so a faulted scenario
	// runs alone until the simulator has recorded its charge.
	var concurrent []int
	for i, sc := range all {
		if sc.fault == "" {
			concurrent = append(concurrent, i)
			continue
		}
		say("placing %q: injecting %s into the next charge", sc.name, sc.fault)
		if err := sim.InjectFault(ctx, providersim.Fault{Operation: "payment_intents.create", Fault: sc.fault, Count: 1}); err != nil {
			return nil, fmt.Errorf("inject fault: %w", err)
		}
		o, err := api.create(ctx, newKey(sc.name), fmt.Sprintf("customer%d@example.com", i+1), sc.paymentMethod)
		if err != nil {
			return nil, err
		}
		results[i] = result{orderID: o.OrderID, scenario: sc}
		if err := waitCharged(ctx, sim, o.OrderID, 60*time.Second); err != nil {
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
			o, err := api.create(ctx, newKey(sc.name), fmt.Sprintf("customer%d@example.com", i+1), sc.paymentMethod)
			if err != nil {
				errs[i] = err
				return
			}
			results[i] = result{orderID: o.OrderID, scenario: sc}
			switch sc.cancel {
			case cancelRacing:
				errs[i] = api.cancel(ctx, o.OrderID)
			case cancelLate:
				if _, err := api.waitStatus(ctx, o.OrderID, 2*time.Minute, "confirmed"); err != nil {
					errs[i] = err
					return
				}
				errs[i] = api.cancel(ctx, o.OrderID)
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
		pending := false
		for i := range results {
			r := &results[i]
			view, err := api.get(ctx, r.orderID)
			if err != nil {
				return nil, err
			}
			r.observed = observe(ledger, r.orderID, view.Status)
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

// waitCharged waits until the simulator holds a payment intent for the order.
func waitCharged(ctx context.Context, sim *providersim.Client, orderID string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		l, err := sim.Ledger(ctx)
		if err == nil {
			for _, pi := range l.PaymentIntents {
				if pi.Metadata["order_id"] == orderID {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("order %s: no charge reached the simulator within %s (is the worker running? see .data/logs/worker.log)", orderID, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
