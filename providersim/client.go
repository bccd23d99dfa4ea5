package providersim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Client talks to a running simulator's /_sim endpoints over HTTP, for tests
// and the demo that run it as a separate process (go run ./cmd/providersim).
// In the same process, call the Simulator's methods instead.
type Client struct {
	// BaseURL is the simulator's base URL, as Start prints it. Mandatory.
	BaseURL string
	// HTTP sends the requests. Optional: defaulted to http.DefaultClient.
	HTTP *http.Client
}

// Ledger fetches GET /_sim/ledger.
func (c *Client) Ledger(ctx context.Context) (Ledger, error) {
	var l Ledger
	err := c.do(ctx, http.MethodGet, "/_sim/ledger", nil, &l)
	return l, err
}

// InjectFault posts f to /_sim/faults. A fault the simulator rejects is an
// error carrying the simulator's explanation.
func (c *Client) InjectFault(ctx context.Context, f Fault) error {
	return c.do(ctx, http.MethodPost, "/_sim/faults", f, nil)
}

// ClearFaults drops every pending fault (DELETE /_sim/faults).
func (c *Client) ClearFaults(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/_sim/faults", nil, nil)
}

// Faults lists the pending faults (GET /_sim/faults), Count being the calls
// each has left.
func (c *Client) Faults(ctx context.Context) ([]Fault, error) {
	var l faultList
	err := c.do(ctx, http.MethodGet, "/_sim/faults", nil, &l)
	return l.Faults, err
}

// Reset forgets every object, key and fault (POST /_sim/reset).
func (c *Client) Reset(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/_sim/reset", nil, nil)
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	if c.BaseURL == "" {
		return fmt.Errorf("providersim: Client.BaseURL is empty: set it to the URL the simulator printed")
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("providersim: encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, body)
	if err != nil {
		return fmt.Errorf("providersim: %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("providersim: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("providersim: %s %s: read body: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e simError
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("providersim: %s %s: %s (HTTP %d)", method, path, e.Error, resp.StatusCode)
		}
		return fmt.Errorf("providersim: %s %s: HTTP %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("providersim: %s %s: decode: %w", method, path, err)
		}
	}
	return nil
}

// Authenticate ends a PaymentIntent's 3-D Secure challenge with outcome
// (POST /_sim/payment_intents/{id}/authenticate; see Simulator.Authenticate).
func (c *Client) Authenticate(ctx context.Context, paymentIntentID, outcome string) error {
	return c.do(ctx, http.MethodPost, "/_sim/payment_intents/"+paymentIntentID+"/authenticate", simRequest{Outcome: outcome}, nil)
}

// Settle ends a processing PaymentIntent with outcome
// (POST /_sim/payment_intents/{id}/settle; see Simulator.Settle).
func (c *Client) Settle(ctx context.Context, paymentIntentID, outcome string) error {
	return c.do(ctx, http.MethodPost, "/_sim/payment_intents/"+paymentIntentID+"/settle", simRequest{Outcome: outcome}, nil)
}

// Dispute opens a dispute of a PaymentIntent's charge and returns its id
// (POST /_sim/payment_intents/{id}/dispute; see Simulator.Dispute).
func (c *Client) Dispute(ctx context.Context, paymentIntentID, reason string) (string, error) {
	var out struct {
		Dispute string `json:"dispute"`
	}
	err := c.do(ctx, http.MethodPost, "/_sim/payment_intents/"+paymentIntentID+"/dispute", simRequest{Reason: reason}, &out)
	return out.Dispute, err
}

// FailRefund fails an accepted refund with reason
// (POST /_sim/refunds/{id}/fail; see Simulator.FailRefund).
func (c *Client) FailRefund(ctx context.Context, refundID, reason string) error {
	return c.do(ctx, http.MethodPost, "/_sim/refunds/"+refundID+"/fail", simRequest{Reason: reason}, nil)
}

// Webhooks lists the webhook deliveries (GET /_sim/webhooks).
func (c *Client) Webhooks(ctx context.Context) ([]WebhookDelivery, error) {
	var out struct {
		Webhooks []WebhookDelivery `json:"webhooks"`
	}
	err := c.do(ctx, http.MethodGet, "/_sim/webhooks", nil, &out)
	return out.Webhooks, err
}

// ResendWebhook delivers an event once more (POST /_sim/webhooks/{id}/resend).
func (c *Client) ResendWebhook(ctx context.Context, eventID string) error {
	return c.do(ctx, http.MethodPost, "/_sim/webhooks/"+eventID+"/resend", nil, nil)
}

// HoldWebhooks pauses deliveries; ReleaseWebhooks sends the held ones newest
// first (POST /_sim/webhooks/hold, /_sim/webhooks/release).
func (c *Client) HoldWebhooks(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/_sim/webhooks/hold", nil, nil)
}

// ReleaseWebhooks: see HoldWebhooks.
func (c *Client) ReleaseWebhooks(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/_sim/webhooks/release", nil, nil)
}
