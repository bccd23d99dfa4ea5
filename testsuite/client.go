package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/propagation"
)

// OrderClient drives the order API the way a careful client does: every
// create carries an Idempotency-Key and is retried with the same key until it
// gets an answer.
type OrderClient struct {
	base  string
	email string
	http  *http.Client
}

// NewOrderClient returns a client of the order API at base.
func NewOrderClient(base string) *OrderClient {
	return &OrderClient{base: base, email: "buyer@example.com", http: &http.Client{Timeout: 10 * time.Second}}
}

// As returns a client that orders for the customer with this email (the
// default client orders for buyer@example.com).
func (c *OrderClient) As(email string) *OrderClient {
	out := *c
	out.email = email
	return &out
}

// CreateResponse is the body of 201 Created (and of its replays).
type CreateResponse struct {
	OrderID           string `json:"order_id"`
	Status            string `json:"status"`
	Amount            int64  `json:"amount"`
	Currency          string `json:"currency"`
	EventID           string `json:"event_id"`
	AggregateSequence int64  `json:"aggregate_sequence"`
	Replayed          bool   `json:"-"`
}

// CreateOnce sends one POST /orders and reports the status code; a transport
// error (the server died) is returned as err.
func (c *OrderClient) CreateOnce(ctx context.Context, key, paymentMethod string) (CreateResponse, int, error) {
	body, _ := json.Marshal(map[string]any{
		"customer_email": c.email,
		"currency":       "usd",
		"payment_method": paymentMethod,
		"items":          []map[string]any{{"sku": "SKU-1", "quantity": 2, "unit_amount": 1250}},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/orders", bytes.NewReader(body))
	if err != nil {
		return CreateResponse{}, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	traceHeaders(ctx, req)
	resp, err := c.http.Do(req)
	if err != nil {
		return CreateResponse{}, 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out CreateResponse
	if resp.StatusCode == http.StatusCreated {
		if err := json.Unmarshal(b, &out); err != nil {
			return out, resp.StatusCode, fmt.Errorf("decode %s: %w", b, err)
		}
		out.Replayed = resp.Header.Get("Idempotent-Replayed") == "true"
	}
	return out, resp.StatusCode, nil
}

// Create retries CreateOnce with the same key until the server answers 201.
func (c *OrderClient) Create(ctx context.Context, key, paymentMethod string) (CreateResponse, error) {
	for {
		out, code, err := c.CreateOnce(ctx, key, paymentMethod)
		if err == nil && code == http.StatusCreated {
			return out, nil
		}
		if err == nil && code >= 400 && code < 500 && code != http.StatusConflict {
			return out, fmt.Errorf("create %s: HTTP %d", key, code)
		}
		select {
		case <-ctx.Done():
			return out, fmt.Errorf("create %s: %w (last: code %d, err %v)", key, ctx.Err(), code, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Cancel retries POST /orders/{id}/cancel until the server answers 202.
func (c *OrderClient) Cancel(ctx context.Context, orderID string) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/orders/"+orderID+"/cancel", nil)
		if err != nil {
			return err
		}
		traceHeaders(ctx, req)
		resp, err := c.http.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusAccepted {
				return nil
			}
			if resp.StatusCode >= 400 && resp.StatusCode < 500 {
				return fmt.Errorf("cancel %s: HTTP %d", orderID, resp.StatusCode)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cancel %s: %w (last error %v)", orderID, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// traceHeaders sends the span of ctx, if any, as the W3C traceparent, as
// a traced client (make demo's span of an order) does: the order API's
// span of the request is then its child.
func traceHeaders(ctx context.Context, req *http.Request) {
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
}
