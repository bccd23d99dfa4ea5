package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// EmailClient is a client of a Resend-style email API: POST {BaseURL}/emails
// with a JSON message, a bearer key and an Idempotency-Key header, answered
// by {"id": "..."}.
type EmailClient struct {
	// BaseURL is the API's root, e.g. https://api.resend.com. Mandatory.
	BaseURL string
	// APIKey is sent as a bearer token. Optional for the simulator.
	APIKey string
	// From is the sender address. Optional: defaulted to [DefaultEmailFrom].
	From string
	// HTTP is the transport. Optional: defaulted to a client with a 20 s
	// timeout.
	HTTP *http.Client
}

// DefaultEmailFrom is the sender when EmailClient.From is empty.
const DefaultEmailFrom = "outflow <orders@outflow.example>"

// Email is one message. Tags are Resend tags (name/value pairs), used by
// operators and tests to find the emails of an order.
type Email struct {
	From    string     `json:"from"`
	To      []string   `json:"to"`
	Subject string     `json:"subject"`
	Text    string     `json:"text"`
	Tags    []EmailTag `json:"tags,omitempty"`
}

// EmailTag is a Resend tag.
type EmailTag struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// EmailAPIError is a non-2xx answer of the email API.
type EmailAPIError struct {
	StatusCode int
	// Name and Message are Resend's error fields, when the body had them.
	Name    string
	Message string
}

// Error describes the provider's answer.
func (e *EmailAPIError) Error() string {
	return fmt.Sprintf("email API: HTTP %d %s: %s", e.StatusCode, e.Name, e.Message)
}

// Retryable reports whether sending again under the same key can succeed:
// 5xx, 429, 401/403 (credentials an operator can fix), and 409 while the
// same key is still in flight.
func (e *EmailAPIError) Retryable() bool {
	switch e.StatusCode {
	case http.StatusTooManyRequests, http.StatusUnauthorized, http.StatusForbidden:
		return true
	}
	if e.StatusCode >= 500 {
		return true
	}
	// Resend: 409 concurrent_idempotent_requests is transient;
	// invalid_idempotent_request (same key, other payload) is not.
	return e.StatusCode == http.StatusConflict && !strings.Contains(e.Name, "invalid")
}

// Send posts m under idempotencyKey and returns the provider's email id.
func (c *EmailClient) Send(ctx context.Context, m Email, idempotencyKey string) (string, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.BaseURL, "/")+"/emails", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("email API: bad EMAIL_API_BASE %q: %w", c.BaseURL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idempotencyKey)
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 20 * time.Second}
	}
	res, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if res.StatusCode/100 != 2 {
		var eb struct {
			Name    string `json:"name"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(data, &eb)
		if eb.Message == "" {
			eb.Message = strings.TrimSpace(string(data))
		}
		return "", &EmailAPIError{StatusCode: res.StatusCode, Name: eb.Name, Message: eb.Message}
	}
	var ok struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &ok); err != nil || ok.ID == "" {
		return "", fmt.Errorf("email API: unexpected success body %q", string(data))
	}
	return ok.ID, nil
}
