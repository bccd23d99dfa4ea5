package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Limits of a request.
const (
	maxBodyBytes   = 64 << 10
	maxKeyLen      = 255
	maxIDLen       = 255
	maxSKULen      = 64
	maxItems       = 100
	maxQuantity    = 1_000_000
	maxStock       = 1_000_000_000
	requestTimeout = 15 * time.Second
)

// ReplayedHeader is set to "true" on an answer replayed for an
// Idempotency-Key answered before.
const ReplayedHeader = "Idempotent-Replayed"

// Handler is the HTTP API:
//
//	POST /reservations                    reserve stock for an order (Idempotency-Key)
//	POST /reservations/{order_id}/release release the order's reservation (Idempotency-Key)
//	GET  /reservations/{order_id}         the order's reservation
//	PUT  /stock/{sku}                     set a SKU's available quantity
//	GET  /stock/{sku}                     a SKU's available and reserved quantities
//	GET  /healthz                         200 while the database answers
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /reservations", s.handleReserve)
	mux.HandleFunc("POST /reservations/{order_id}/release", s.handleRelease)
	mux.HandleFunc("GET /reservations/{order_id}", s.handleGetReservation)
	mux.HandleFunc("PUT /stock/{sku}", s.handlePutStock)
	mux.HandleFunc("GET /stock/{sku}", s.handleGetStock)
	mux.HandleFunc("GET /healthz", s.handleHealth)
	return mux
}

// reserveRequest is POST /reservations's body.
type reserveRequest struct {
	OrderID    string `json:"order_id"`
	WorkflowID string `json:"workflow_id"`
	Items      []Item `json:"items"`
}

// releaseRequest is POST /reservations/{order_id}/release's body.
type releaseRequest struct {
	WorkflowID string `json:"workflow_id"`
}

func (s *Service) handleReserve(w http.ResponseWriter, r *http.Request) {
	key, apiErr := idempotencyKey(r)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	var req reserveRequest
	if apiErr := decode(w, r, &req); apiErr != nil {
		writeError(w, apiErr)
		return
	}
	c := change{op: "reserve", key: key, orderID: req.OrderID, workflowID: req.WorkflowID, items: req.Items}
	if apiErr := c.validate(); apiErr != nil {
		writeError(w, apiErr)
		return
	}
	s.serve(w, r, c)
}

func (s *Service) handleRelease(w http.ResponseWriter, r *http.Request) {
	key, apiErr := idempotencyKey(r)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	var req releaseRequest
	if apiErr := decode(w, r, &req); apiErr != nil {
		writeError(w, apiErr)
		return
	}
	c := change{op: "release", key: key, orderID: r.PathValue("order_id"), workflowID: req.WorkflowID}
	if apiErr := c.validate(); apiErr != nil {
		writeError(w, apiErr)
		return
	}
	s.serve(w, r, c)
}

// serve applies c and writes its answer, after the commit.
func (s *Service) serve(w http.ResponseWriter, r *http.Request, c change) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	ans, err := s.apply(ctx, c)
	var apiErr *apiError
	switch {
	case errors.As(err, &apiErr):
		writeError(w, apiErr)
		return
	case err != nil:
		s.logger.Error("request failed", "op", c.op, "order_id", c.orderID, "err", err)
		writeError(w, refuse(http.StatusInternalServerError, "internal_error", "the request failed; retry it with the same Idempotency-Key"))
		return
	}
	if ans.replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
	writeRawJSON(w, ans.status, ans.body)
}

// reservationView is GET /reservations/{order_id}'s body.
type reservationView struct {
	OrderID    string `json:"order_id"`
	WorkflowID string `json:"workflow_id"`
	Status     string `json:"status"`
	Items      []Item `json:"items"`
}

func (s *Service) handleGetReservation(w http.ResponseWriter, r *http.Request) {
	v := reservationView{OrderID: r.PathValue("order_id")}
	err := pgx.BeginFunc(r.Context(), s.db, func(tx pgx.Tx) error {
		// FOR UPDATE is harmless here and keeps one statement per purpose.
		if err := tx.QueryRow(r.Context(), query("ReservationForUpdate"), pgx.NamedArgs{"order_id": v.OrderID}).Scan(&v.WorkflowID, &v.Status); err != nil {
			return err
		}
		items, err := reservationItems(r.Context(), tx, v.OrderID)
		v.Items = items
		return err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		writeError(w, refuse(http.StatusNotFound, "not_found", "order %s has no reservation", v.OrderID))
	case err != nil:
		s.internal(w, "read reservation", err)
	default:
		writeJSON(w, http.StatusOK, v)
	}
}

// stockView is the body of the stock endpoints.
type stockView struct {
	SKU       string `json:"sku"`
	Available int64  `json:"available"`
	Reserved  int64  `json:"reserved"`
}

func (s *Service) handlePutStock(w http.ResponseWriter, r *http.Request) {
	v := stockView{SKU: r.PathValue("sku")}
	var req struct {
		Available *int64 `json:"available"`
	}
	if apiErr := decode(w, r, &req); apiErr != nil {
		writeError(w, apiErr)
		return
	}
	switch {
	case !validText(v.SKU, maxSKULen):
		writeError(w, refuse(http.StatusBadRequest, "invalid_request", "the SKU must be 1 to %d printable characters", maxSKULen))
		return
	case req.Available == nil || *req.Available < 0 || *req.Available > maxStock:
		writeError(w, refuse(http.StatusBadRequest, "invalid_request", "available must be an integer from 0 to %d", maxStock))
		return
	}
	err := s.db.QueryRow(r.Context(), query("SetStock"), pgx.NamedArgs{"sku": v.SKU, "available": *req.Available}).Scan(&v.Available, &v.Reserved)
	if err != nil {
		s.internal(w, "set stock", err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Service) handleGetStock(w http.ResponseWriter, r *http.Request) {
	v := stockView{SKU: r.PathValue("sku")}
	err := s.db.QueryRow(r.Context(), query("Stock"), pgx.NamedArgs{"sku": v.SKU}).Scan(&v.Available, &v.Reserved)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		writeError(w, refuse(http.StatusNotFound, "not_found", "no stock is recorded for SKU %s", v.SKU))
	case err != nil:
		s.internal(w, "read stock", err)
	default:
		writeJSON(w, http.StatusOK, v)
	}
}

func (s *Service) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.db.Ping(ctx); err != nil {
		writeError(w, refuse(http.StatusServiceUnavailable, "unavailable", "the database does not answer"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Service) internal(w http.ResponseWriter, what string, err error) {
	s.logger.Error(what+" failed", "err", err)
	writeError(w, refuse(http.StatusInternalServerError, "internal_error", "%s failed", what))
}

// idempotencyKey is the request's mandatory Idempotency-Key.
func idempotencyKey(r *http.Request) (string, *apiError) {
	key := r.Header.Get("Idempotency-Key")
	switch {
	case key == "":
		return "", refuse(http.StatusBadRequest, "missing_idempotency_key", "the Idempotency-Key header is required: the same key on a retry answers the first outcome")
	case !validText(key, maxKeyLen):
		return "", refuse(http.StatusBadRequest, "invalid_idempotency_key", "the Idempotency-Key must be 1 to %d printable characters", maxKeyLen)
	}
	return key, nil
}

// decode reads one JSON object into v, refusing unknown fields, trailing
// data and bodies over maxBodyBytes.
func decode(w http.ResponseWriter, r *http.Request, v any) *apiError {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return refuse(http.StatusRequestEntityTooLarge, "body_too_large", "the body exceeds %d bytes", maxBodyBytes)
		}
		return refuse(http.StatusBadRequest, "invalid_json", "the body is not the expected JSON object: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return refuse(http.StatusBadRequest, "invalid_json", "the body must hold exactly one JSON object")
	}
	return nil
}

// validate checks c's fields (and sorts a reserve's items by SKU).
func (c *change) validate() *apiError {
	bad := func(format string, args ...any) *apiError {
		return refuse(http.StatusBadRequest, "invalid_request", format, args...)
	}
	switch {
	case !validText(c.orderID, maxIDLen):
		return bad("order_id must be 1 to %d printable characters", maxIDLen)
	case !validText(c.workflowID, maxIDLen):
		return bad("workflow_id must be 1 to %d printable characters: the saga's workflow ID the inventory signals", maxIDLen)
	}
	if c.op != "reserve" {
		return nil
	}
	if len(c.items) == 0 || len(c.items) > maxItems {
		return bad("items must list 1 to %d SKUs", maxItems)
	}
	c.items = append([]Item(nil), c.items...)
	sortItems(c.items)
	for i, it := range c.items {
		switch {
		case !validText(it.SKU, maxSKULen):
			return bad("items[].sku must be 1 to %d printable characters", maxSKULen)
		case it.Quantity < 1 || it.Quantity > maxQuantity:
			return bad("items[].quantity of %s must be from 1 to %d", it.SKU, maxQuantity)
		case i > 0 && c.items[i-1].SKU == it.SKU:
			return bad("SKU %s is listed twice; list each SKU once with its total quantity", it.SKU)
		}
	}
	return nil
}

// validText: 1 to max bytes, printable ASCII without spaces at the ends.
func validText(s string, max int) bool {
	if s == "" || len(s) > max || strings.TrimSpace(s) != s {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r > 0x7e {
			return false
		}
	}
	return true
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.Status, struct {
		Error *apiError `json:"error"`
	}{e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":{"code":"internal_error","message":"cannot encode the response"}}`)
	}
	writeRawJSON(w, status, body)
}

func writeRawJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
