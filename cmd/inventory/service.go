package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/inbox"
)

// InboxConsumer is the inbox consumer name of the inventory's requests: its
// inbox row per Idempotency-Key is what makes a second request with the key
// wait for the first one's transaction and then find its answer.
const InboxConsumer = "inventory.request"

// keyNamespace derives an inbox event ID (a UUID) from an Idempotency-Key:
// the inbox keys its rows by UUID, a client's key is any string.
var keyNamespace = uuid.MustParse("7b0e3f2a-6c1d-5e8f-9a4b-2d6c8e0f1a3b")

// keyID is the inbox's UUID for an Idempotency-Key.
func keyID(key string) uuid.UUID { return uuid.NewSHA1(keyNamespace, []byte(key)) }

// ServiceConfig configures a [Service].
type ServiceConfig struct {
	// DB is the inventory's database, migrated by [Migrate]. Mandatory.
	DB *pgxpool.Pool
	// Registerer receives the inbox's inbox_duplicates_total. Optional.
	Registerer prometheus.Registerer
	// Logger logs failed requests. Optional: defaulted to no logging.
	Logger *slog.Logger
	// Failpoints is where failpoints.InventoryAfterCommit is looked up
	// (the binary passes failpoints.Parse(os.Getenv(failpoints.EnvVar))). Optional: none.
	Failpoints *failpoints.Set
	// Enqueuer writes the service's events. Optional: nil is
	// outbox.Enqueue, which writes where the database's relay source says.
	Enqueuer *outbox.Enqueuer
}

// Service reserves and releases stock; [Service.Handler] is its HTTP API.
type Service struct {
	db     *pgxpool.Pool
	inbox  *inbox.Inbox
	logger *slog.Logger
	fp     *failpoints.Set
	q      *outbox.Enqueuer
}

// NewService returns the service over cfg.DB.
func NewService(cfg ServiceConfig) (*Service, error) {
	if cfg.DB == nil {
		return nil, errors.New("inventory: ServiceConfig.DB is nil")
	}
	ib, err := inbox.New(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{db: cfg.DB, inbox: ib, logger: cfg.Logger, fp: cfg.Failpoints, q: cfg.Enqueuer}, nil
}

// apiError is a refused request: its status and the JSON error body.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func refuse(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// answer is a response to write: a fresh one or the stored one of its key.
type answer struct {
	status   int
	body     []byte
	replayed bool
}

// change is one reserve or release, validated.
type change struct {
	op         string // "reserve" or "release"
	key        string
	orderID    string
	workflowID string
	items      []Item // reserve only, sorted by SKU
}

// hash identifies the request under its key: the operation and its
// validated fields, so that the same request sent again (whatever its JSON
// spacing or item order) is the same, and any other request is not.
func (c change) hash() []byte {
	b, _ := json.Marshal(struct {
		Op, OrderID, WorkflowID string
		Items                   []Item
	}{c.op, c.orderID, c.workflowID, c.items})
	sum := sha256.Sum256(b)
	return sum[:]
}

// response is the body of a reserve's or release's answer.
type response struct {
	Outcome
	// EventID is the outbox event the change wrote; empty for
	// already_released, which wrote none.
	EventID string `json:"event_id,omitempty"`
}

// apply runs c in one transaction: the inbox row of its key, the change,
// the outbox event and the stored answer commit together. A key already
// answered returns that answer (replayed) and writes nothing; a key that
// answered another request is a 422 that writes nothing.
func (s *Service) apply(ctx context.Context, c change) (answer, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return answer{}, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	hash := c.hash()
	// Waits for a concurrent request with the same key to end, then finds
	// its row.
	first, err := s.inbox.Record(ctx, tx, InboxConsumer, keyID(c.key))
	if err != nil {
		return answer{}, err
	}
	var stored answer
	var storedHash []byte
	err = tx.QueryRow(ctx, query("RequestByKey"), pgx.NamedArgs{"idempotency_key": c.key}).
		Scan(&storedHash, &stored.status, &stored.body)
	switch {
	case err == nil:
		// Answered before (with an inbox row, or one the retention cleanup
		// removed): replay it, write nothing (the rollback takes back any
		// inbox row just inserted).
		if !bytes.Equal(storedHash, hash) {
			return answer{}, refuse(http.StatusUnprocessableEntity, "idempotency_key_reused",
				"Idempotency-Key %q was used for a different request; use a new key for a new request", c.key)
		}
		stored.replayed = true
		return stored, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return answer{}, fmt.Errorf("read the answer of key %q: %w", c.key, err)
	case !first:
		return answer{}, fmt.Errorf("inventory: the inbox has key %q but no answer is stored for it", c.key)
	}

	if _, err := tx.Exec(ctx, query("LockOrder"), pgx.NamedArgs{"order_id": c.orderID}); err != nil {
		return answer{}, fmt.Errorf("lock order %s: %w", c.orderID, err)
	}
	var out Outcome
	status := http.StatusOK
	switch c.op {
	case "reserve":
		out, err = reserveTx(ctx, tx, c)
		if err == nil && out.Outcome == OutcomeReserved {
			status = http.StatusCreated
		}
	case "release":
		out, err = releaseTx(ctx, tx, c)
	default:
		err = fmt.Errorf("inventory: unknown operation %q", c.op)
	}
	if err != nil {
		return answer{}, err
	}
	out.IdempotencyKey = c.key
	resp := response{Outcome: out}
	var eventID *uuid.UUID
	if typ := out.eventType(); typ != "" {
		ev, err := outbox.NewEvent(AggregateType, c.orderID, typ, SchemaVersion, out)
		if err != nil {
			return answer{}, err
		}
		enqueued, err := s.q.Enqueue(ctx, tx, ev)
		if err != nil {
			return answer{}, err
		}
		eventID = &enqueued[0].ID
		resp.EventID = eventID.String()
	}
	body, err := json.Marshal(resp)
	if err != nil {
		return answer{}, err
	}
	if _, err := tx.Exec(ctx, query("InsertRequest"), pgx.NamedArgs{
		"idempotency_key": c.key, "request_hash": hash, "status_code": status, "response": body, "event_id": eventID,
	}); err != nil {
		return answer{}, fmt.Errorf("store the answer of key %q: %w", c.key, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return answer{}, fmt.Errorf("commit: %w", err)
	}
	// Committed, not yet answered: a crash here leaves the change, its
	// event and its answer, which the client's retry with the key replays.
	if err := s.fp.Inject(ctx, failpoints.InventoryAfterCommit); err != nil {
		return answer{}, err
	}
	return answer{status: status, body: body}, nil
}

// reserveTx reserves c.items for c.orderID, or rejects the whole request
// when a SKU is short (nothing is held then). An order reserved already is
// a 409; an order released (or released before it was reserved) is
// rejected.
func reserveTx(ctx context.Context, tx pgx.Tx, c change) (Outcome, error) {
	out := Outcome{OrderID: c.orderID, WorkflowID: c.workflowID, Items: c.items}
	var workflowID, status string
	err := tx.QueryRow(ctx, query("ReservationForUpdate"), pgx.NamedArgs{"order_id": c.orderID}).Scan(&workflowID, &status)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return Outcome{}, fmt.Errorf("read the reservation of order %s: %w", c.orderID, err)
	case status == "reserved":
		return Outcome{}, refuse(http.StatusConflict, "order_already_reserved",
			"order %s already holds a reservation (made with another Idempotency-Key); release it first", c.orderID)
	default: // released
		out.Outcome, out.Reason = OutcomeRejected, ReasonOrderReleased
		return out, nil
	}

	skus := make([]string, len(c.items))
	for i, it := range c.items {
		skus[i] = it.SKU
	}
	rows, err := tx.Query(ctx, query("StockForUpdate"), pgx.NamedArgs{"skus": skus})
	if err != nil {
		return Outcome{}, fmt.Errorf("lock the stock: %w", err)
	}
	available := map[string]int64{}
	for rows.Next() {
		var sku string
		var n int64
		if err := rows.Scan(&sku, &n); err != nil {
			rows.Close()
			return Outcome{}, err
		}
		available[sku] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Outcome{}, fmt.Errorf("lock the stock: %w", err)
	}
	for _, it := range c.items {
		if n := available[it.SKU]; n < it.Quantity { // an unknown SKU has none
			out.Shortages = append(out.Shortages, Shortage{SKU: it.SKU, Requested: it.Quantity, Available: n})
		}
	}
	if len(out.Shortages) > 0 {
		out.Outcome, out.Reason = OutcomeRejected, ReasonInsufficientStock
		return out, nil
	}
	if _, err := tx.Exec(ctx, query("InsertReservation"), pgx.NamedArgs{"order_id": c.orderID, "workflow_id": c.workflowID}); err != nil {
		return Outcome{}, fmt.Errorf("insert the reservation of order %s: %w", c.orderID, err)
	}
	for _, it := range c.items {
		args := pgx.NamedArgs{"order_id": c.orderID, "sku": it.SKU, "quantity": it.Quantity}
		if _, err := tx.Exec(ctx, query("HoldStock"), args); err != nil {
			return Outcome{}, fmt.Errorf("hold %d of %s: %w", it.Quantity, it.SKU, err)
		}
		if _, err := tx.Exec(ctx, query("InsertReservationItem"), args); err != nil {
			return Outcome{}, fmt.Errorf("insert the reservation item %s: %w", it.SKU, err)
		}
	}
	out.Outcome = OutcomeReserved
	return out, nil
}

// releaseTx gives back what c.orderID holds. An order with no reservation
// gets a released tombstone (and a StockReleased with no items), so a
// reserve arriving later is rejected; an order released already is
// answered already_released and writes no event.
func releaseTx(ctx context.Context, tx pgx.Tx, c change) (Outcome, error) {
	out := Outcome{OrderID: c.orderID, WorkflowID: c.workflowID, Items: []Item{}}
	var workflowID, status string
	err := tx.QueryRow(ctx, query("ReservationForUpdate"), pgx.NamedArgs{"order_id": c.orderID}).Scan(&workflowID, &status)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if _, err := tx.Exec(ctx, query("InsertReleasedTombstone"), pgx.NamedArgs{"order_id": c.orderID, "workflow_id": c.workflowID}); err != nil {
			return Outcome{}, fmt.Errorf("insert the release of order %s: %w", c.orderID, err)
		}
		out.Outcome, out.Reason = OutcomeReleased, ReasonNothingReserved
		return out, nil
	case err != nil:
		return Outcome{}, fmt.Errorf("read the reservation of order %s: %w", c.orderID, err)
	}
	if workflowID != c.workflowID {
		return Outcome{}, refuse(http.StatusConflict, "workflow_mismatch",
			"order %s was reserved for workflow %q, not %q", c.orderID, workflowID, c.workflowID)
	}
	items, err := reservationItems(ctx, tx, c.orderID)
	if err != nil {
		return Outcome{}, err
	}
	out.Items = items
	if status == "released" {
		out.Outcome = OutcomeAlreadyReleased
		return out, nil
	}
	for _, it := range items {
		if _, err := tx.Exec(ctx, query("ReturnStock"), pgx.NamedArgs{"sku": it.SKU, "quantity": it.Quantity}); err != nil {
			return Outcome{}, fmt.Errorf("return %d of %s: %w", it.Quantity, it.SKU, err)
		}
	}
	if _, err := tx.Exec(ctx, query("MarkReleased"), pgx.NamedArgs{"order_id": c.orderID}); err != nil {
		return Outcome{}, fmt.Errorf("mark order %s released: %w", c.orderID, err)
	}
	out.Outcome = OutcomeReleased
	return out, nil
}

func reservationItems(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, orderID string) ([]Item, error) {
	rows, err := q.Query(ctx, query("ReservationItems"), pgx.NamedArgs{"order_id": orderID})
	if err != nil {
		return nil, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Item, error) {
		var it Item
		err := r.Scan(&it.SKU, &it.Quantity)
		return it, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the items of order %s: %w", orderID, err)
	}
	if items == nil {
		items = []Item{}
	}
	return items, nil
}

// sortItems orders items by SKU (the order stock rows are locked in).
func sortItems(items []Item) {
	slices.SortFunc(items, func(a, b Item) int { return strings.Compare(a.SKU, b.SKU) })
}
