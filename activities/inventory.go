package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
)

// The saga's view of the inventory service (cmd/inventory). The order app
// imports none of the inventory's code: services share only their wire
// contract, which these types restate from docs/reference.md ("The
// inventory service") — the JSON of its HTTP API and of its events'
// payload (schema version 1).

// InventorySignal is the signal the inventory's relay delivers its events
// on (its INVENTORY_SIGNAL, whose default this is), each a
// temporalpub.EventInput whose payload is an [InventoryOutcome].
const InventorySignal = "inventory-event"

// The inventory's event types and outcomes.
const (
	InventoryEventReserved = "StockReserved"
	InventoryEventRejected = "StockRejected"
	InventoryEventReleased = "StockReleased"

	InventoryReserved        = "reserved"
	InventoryRejected        = "rejected"
	InventoryReleased        = "released"
	InventoryAlreadyReleased = "already_released"
)

// DefaultInventoryAnswerTimeout is [Config.InventoryAnswerTimeout]'s
// default: how long the saga waits for the inventory's answer signal after
// it asked for a reservation before it fails the order and releases.
const DefaultInventoryAnswerTimeout = 5 * time.Minute

// ErrTypeInventoryRefused: the inventory refused the request itself (a 4xx:
// an invalid request, a key reused for another request, a reservation held
// for another workflow). Final; never retried.
const ErrTypeInventoryRefused = "InventoryRefused"

// InventoryItem is a quantity of one SKU.
type InventoryItem struct {
	SKU      string `json:"sku"`
	Quantity int64  `json:"quantity"`
}

// InventoryShortage is a SKU a rejected reservation asked more of than was
// available.
type InventoryShortage struct {
	SKU       string `json:"sku"`
	Requested int64  `json:"requested"`
	Available int64  `json:"available"`
}

// InventoryOutcome is the inventory's answer to a reserve or release and,
// without EventID, the payload of its StockReserved, StockRejected and
// StockReleased events.
type InventoryOutcome struct {
	OrderID    string `json:"order_id"`
	WorkflowID string `json:"workflow_id"`
	// Outcome is reserved, rejected, released or (an answer only)
	// already_released.
	Outcome   string              `json:"outcome"`
	Items     []InventoryItem     `json:"items"`
	Reason    string              `json:"reason,omitempty"`
	Shortages []InventoryShortage `json:"shortages,omitempty"`
	// IdempotencyKey is the request's key.
	IdempotencyKey string `json:"idempotency_key"`
	// EventID is the event the request wrote (answers only; none for
	// already_released).
	EventID string `json:"event_id,omitempty"`
	// Replayed: the inventory answered from the answer stored for the key
	// (header Idempotent-Replayed): an earlier attempt or run made the
	// request, and its event was signalled then, to whichever run was
	// waiting.
	Replayed bool `json:"replayed,omitempty"`
}

// InventoryClient calls the inventory service's HTTP API.
type InventoryClient struct {
	// BaseURL is the API's root, e.g. http://127.0.0.1:8090 (INVENTORY_URL).
	BaseURL string
	// HTTP is the client; its timeout bounds one request.
	HTTP *http.Client
}

// InventorySettings is what the worker was configured with, as the saga
// reads it through the local activity [Activities.InventorySettings]: the
// value is recorded in the run's history, so a replay decides the same way
// whatever the replaying worker's configuration.
type InventorySettings struct {
	// Enabled: the worker has an inventory (INVENTORY_URL); without one the
	// saga skips the stock step.
	Enabled bool `json:"enabled"`
	// AnswerTimeout is how long the saga waits for the answer signal.
	AnswerTimeout time.Duration `json:"answer_timeout"`
}

// InventorySettings reports whether the stock step is on. It reads only
// the Activities' configuration, so it is safe to call on a nil receiver
// (the workflows' tests do): no inventory.
func (a *Activities) InventorySettings(context.Context) (InventorySettings, error) {
	if a == nil || a.Inventory == nil {
		return InventorySettings{}, nil
	}
	t := a.InventoryAnswerTimeout
	if t <= 0 {
		t = DefaultInventoryAnswerTimeout
	}
	return InventorySettings{Enabled: true, AnswerTimeout: t}, nil
}

// ReserveStockInput is the reservation of an order's items.
type ReserveStockInput struct {
	// EventID is the OrderCreated event; the key derives from it
	// ([ReserveKey]).
	EventID string `json:"event_id"`
	OrderID string `json:"order_id"`
	// WorkflowID is the saga the inventory signals its answer to.
	WorkflowID string          `json:"workflow_id"`
	Items      []InventoryItem `json:"items"`
	// CustomerEmail is never sent to the inventory: it makes the payload
	// codec encrypt this input (the order's lines) with the customer's key,
	// so forget-customer erases it with the rest of their data
	// (internal/personal).
	CustomerEmail string `json:"customer_email"`
}

// ReleaseStockInput is the release of the reservation an OrderCreated
// event's saga asked for.
type ReleaseStockInput struct {
	// EventID is the OrderCreated event whose reservation is released; the
	// key derives from it ([ReleaseKey]), so every path that releases it
	// (the saga, the cancel workflow) sends the same request.
	EventID    string `json:"event_id"`
	OrderID    string `json:"order_id"`
	WorkflowID string `json:"workflow_id"`
}

// ReserveStock asks the inventory to reserve the order's items under
// [ReserveKey]. The answer says what the inventory did; the saga waits for
// the event signal, which says the same. Transport failures and 5xx are
// retryable (the same key replays the first answer); a 4xx is a
// non-retryable InventoryRefused.
func (a *Activities) ReserveStock(ctx context.Context, in ReserveStockInput) (InventoryOutcome, error) {
	body, err := json.Marshal(struct {
		OrderID    string          `json:"order_id"`
		WorkflowID string          `json:"workflow_id"`
		Items      []InventoryItem `json:"items"`
	}{in.OrderID, in.WorkflowID, in.Items})
	if err != nil {
		return InventoryOutcome{}, err
	}
	return a.inventoryCall(ctx, "/reservations", ReserveKey(in.EventID), body)
}

// ReleaseStock asks the inventory to release the order's reservation under
// [ReleaseKey]: released, already_released and a release of nothing (a
// tombstone that refuses a late reserve) all mean nothing is held. Errors
// as [Activities.ReserveStock].
func (a *Activities) ReleaseStock(ctx context.Context, in ReleaseStockInput) (InventoryOutcome, error) {
	body, err := json.Marshal(struct {
		WorkflowID string `json:"workflow_id"`
	}{in.WorkflowID})
	if err != nil {
		return InventoryOutcome{}, err
	}
	return a.inventoryCall(ctx, "/reservations/"+url.PathEscape(in.OrderID)+"/release", ReleaseKey(in.EventID), body)
}

var errNoInventory = errors.New("activities: no inventory configured (set INVENTORY_URL)")

func (a *Activities) inventoryCall(ctx context.Context, path, key string, body []byte) (InventoryOutcome, error) {
	if a.Inventory == nil || a.Inventory.BaseURL == "" {
		return InventoryOutcome{}, errNoInventory
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(a.Inventory.BaseURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return InventoryOutcome{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInventoryRefused, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	hc := a.Inventory.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 20 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return InventoryOutcome{}, fmt.Errorf("inventory %s: %w", path, err) // retried under the same key
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return InventoryOutcome{}, fmt.Errorf("inventory %s: reading the answer: %w", path, err)
	}
	switch {
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return InventoryOutcome{}, fmt.Errorf("inventory %s: %s: %s", path, resp.Status, bytes.TrimSpace(data))
	case resp.StatusCode >= 400:
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(data, &e)
		return InventoryOutcome{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("inventory %s refused (%s): %s: %s", path, resp.Status, e.Error.Code, e.Error.Message), ErrTypeInventoryRefused, nil)
	}
	var o InventoryOutcome
	if err := json.Unmarshal(data, &o); err != nil {
		return InventoryOutcome{}, fmt.Errorf("inventory %s: the answer is not an outcome: %w", path, err)
	}
	o.Replayed = resp.Header.Get("Idempotent-Replayed") == "true"
	return o, nil
}
