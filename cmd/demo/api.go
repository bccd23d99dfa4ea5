package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// orderAPI is a minimal client of the order service's HTTP API.
type orderAPI struct {
	base string
	http *http.Client
}

type createdOrder struct {
	OrderID string `json:"order_id"`
	Status  string `json:"status"`
	EventID string `json:"event_id"`
}

type orderView struct {
	OrderID string `json:"order_id"`
	Status  string `json:"status"`
	Events  []struct {
		EventID    string  `json:"event_id"`
		EventType  string  `json:"event_type"`
		WorkflowID *string `json:"workflow_id"`
	} `json:"events"`
}

func (a *orderAPI) do(ctx context.Context, method, path string, body any, headers map[string]string, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	// The order's span, when ctx has one (the create and the cancel):
	// the order API's span of the request is its child.
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return &httpStatusError{code: resp.StatusCode, msg: fmt.Sprintf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))}
	}
	return json.Unmarshal(b, out)
}

// httpStatusError is an answer that was not a success.
type httpStatusError struct {
	code int
	msg  string
}

func (e *httpStatusError) Error() string { return e.msg }

// create places an order with an Idempotency-Key, so a retry is safe.
func (a *orderAPI) create(ctx context.Context, key, email, paymentMethod string, items []item) (createdOrder, error) {
	lines := make([]map[string]any, 0, len(items))
	for _, it := range items {
		lines = append(lines, map[string]any{"sku": it.sku, "quantity": it.quantity, "unit_amount": it.unitPrice})
	}
	body := map[string]any{
		"customer_email": email,
		"currency":       "usd",
		"payment_method": paymentMethod,
		"items":          lines,
		// Personal data the payload codec keeps out of Temporal's
		// histories (docs/privacy.md), printed in the confirmation email.
		"shipping_address": map[string]any{
			"name": "Ada Lovelace", "line1": "12 St James's Square", "city": "London", "postal_code": "SW1Y 4LB", "country": "GB",
		},
	}
	var out createdOrder
	err := a.do(ctx, http.MethodPost, "/orders", body, map[string]string{"Idempotency-Key": key}, &out)
	return out, err
}

func (a *orderAPI) cancel(ctx context.Context, id string) error {
	var out map[string]any
	return a.do(ctx, http.MethodPost, "/orders/"+id+"/cancel", map[string]any{}, nil, &out)
}

func (a *orderAPI) get(ctx context.Context, id string) (orderView, error) {
	var out orderView
	err := a.do(ctx, http.MethodGet, "/orders/"+id, nil, nil, &out)
	return out, err
}

// waitStatus polls the order until its status is one of want.
func (a *orderAPI) waitStatus(ctx context.Context, id string, timeout time.Duration, want ...string) (orderView, error) {
	deadline := time.Now().Add(timeout)
	var last orderView
	for {
		v, err := a.get(ctx, id)
		if err == nil {
			last = v
			for _, w := range want {
				if v.Status == w {
					return v, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return last, fmt.Errorf("order %s is %q after %s, want one of %v", id, last.Status, timeout, want)
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
