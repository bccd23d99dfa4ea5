package main

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest"
)

// TestReserveAndReleaseSignalTheSaga: a reserve holds the stock and its
// StockReserved reaches the saga as a signal carrying the order, the
// outcome and the items; the same key answers the same and writes nothing,
// the key with another body is a 422 and another key for the reserved
// order a 409, both writing nothing; the release gives the stock back and
// its StockReleased follows; a second release (another key) answers
// already_released and writes no event.
func TestReserveAndReleaseSignalTheSaga(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	setStock(t, s.url, "SKU-A", 10)
	setStock(t, s.url, "SKU-B", 5)
	orderID, saga := uuid.NewString(), "saga-"+uuid.NewString()
	body := reserveBody(orderID, saga, item("SKU-B", 5), item("SKU-A", 3))

	r := mustCall(t, http.MethodPost, s.url+"/reservations", "res-"+orderID, body)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.False(t, r.replayed)
	out, eventID := r.outcome(t)
	want := []Item{{SKU: "SKU-A", Quantity: 3}, {SKU: "SKU-B", Quantity: 5}}
	require.Equal(t, Outcome{OrderID: orderID, WorkflowID: saga, Outcome: OutcomeReserved, Items: want, IdempotencyKey: "res-" + orderID}, out)
	require.Equal(t, stockLevel{Available: 7, Reserved: 3}, stockOf(t, s.db, "SKU-A"))
	require.Equal(t, stockLevel{Available: 0, Reserved: 5}, stockOf(t, s.db, "SKU-B"))
	ev := outboxtest.RequireEnqueued(t, s.db, outboxtest.Match{AggregateType: AggregateType, AggregateID: orderID})
	require.Equal(t, eventID, ev.ID.String())
	require.Equal(t, EventReserved, ev.Type)
	after := rows{Reservations: 1, Items: 2, Requests: 1, Inbox: 1, Events: 1}
	require.Equal(t, after, countRows(t, s.db))

	st := waitSaga(t, saga, 1)
	require.Equal(t, handled{EventID: eventID, EventType: EventReserved, Outcome: out}, st.Handled[0])

	// The same request again, the items in another order and other spacing.
	again := mustCall(t, http.MethodPost, s.url+"/reservations", "res-"+orderID, reserveBody(orderID, saga, item("SKU-A", 3), item("SKU-B", 5)))
	require.Equal(t, http.StatusCreated, again.status)
	require.True(t, again.replayed)
	require.Equal(t, string(r.body), string(again.body), "the first answer, byte for byte")
	require.Equal(t, after, countRows(t, s.db), "a replay writes nothing")

	reused := mustCall(t, http.MethodPost, s.url+"/reservations", "res-"+orderID, reserveBody(orderID, saga, item("SKU-A", 4)))
	require.Equal(t, http.StatusUnprocessableEntity, reused.status, "%s", reused.body)
	require.Equal(t, "idempotency_key_reused", reused.errorCode(t))
	reusedRelease := mustCall(t, http.MethodPost, s.url+"/reservations/"+orderID+"/release", "res-"+orderID, `{"workflow_id":"`+saga+`"}`)
	require.Equal(t, http.StatusUnprocessableEntity, reusedRelease.status, "a reserve's key on a release: %s", reusedRelease.body)
	twice := mustCall(t, http.MethodPost, s.url+"/reservations", "res2-"+orderID, body)
	require.Equal(t, http.StatusConflict, twice.status, "%s", twice.body)
	require.Equal(t, "order_already_reserved", twice.errorCode(t))
	require.Equal(t, after, countRows(t, s.db), "refused requests write nothing")
	require.Equal(t, stockLevel{Available: 7, Reserved: 3}, stockOf(t, s.db, "SKU-A"))

	rel := mustCall(t, http.MethodPost, s.url+"/reservations/"+orderID+"/release", "rel-"+orderID, `{"workflow_id":"`+saga+`"}`)
	require.Equal(t, http.StatusOK, rel.status, "%s", rel.body)
	relOut, relEvent := rel.outcome(t)
	require.Equal(t, Outcome{OrderID: orderID, WorkflowID: saga, Outcome: OutcomeReleased, Items: want, IdempotencyKey: "rel-" + orderID}, relOut)
	require.Equal(t, stockLevel{Available: 10, Reserved: 0}, stockOf(t, s.db, "SKU-A"))
	require.Equal(t, stockLevel{Available: 5, Reserved: 0}, stockOf(t, s.db, "SKU-B"))
	st = waitSaga(t, saga, 2)
	require.Equal(t, handled{EventID: relEvent, EventType: EventReleased, Outcome: relOut}, st.Handled[1], "the release comes after the reserve")

	relAgain := mustCall(t, http.MethodPost, s.url+"/reservations/"+orderID+"/release", "rel2-"+orderID, `{"workflow_id":"`+saga+`"}`)
	require.Equal(t, http.StatusOK, relAgain.status, "%s", relAgain.body)
	o, noEvent := relAgain.outcome(t)
	require.Equal(t, OutcomeAlreadyReleased, o.Outcome)
	require.Empty(t, noEvent)
	require.Equal(t, rows{Reservations: 1, Items: 2, Requests: 3, Inbox: 3, Events: 2}, countRows(t, s.db), "no event for a release that changed nothing")
	require.Equal(t, stockLevel{Available: 10, Reserved: 0}, stockOf(t, s.db, "SKU-A"), "stock is given back once")

	relayed := outboxtest.WaitFor(t, s.db, outboxtest.Match{}, 30*time.Second, outboxtest.AllPublished)
	require.Len(t, relayed, 2)
	time.Sleep(500 * time.Millisecond)
	require.Zero(t, waitSaga(t, saga, 2).Duplicates)

	// A released order is never reserved again: a late reserve is rejected.
	late := mustCall(t, http.MethodPost, s.url+"/reservations", "res3-"+orderID, body)
	require.Equal(t, http.StatusOK, late.status, "%s", late.body)
	lateOut, _ := late.outcome(t)
	require.Equal(t, OutcomeRejected, lateOut.Outcome)
	require.Equal(t, ReasonOrderReleased, lateOut.Reason)
	require.Equal(t, stockLevel{Available: 10, Reserved: 0}, stockOf(t, s.db, "SKU-A"))
}

// TestOutOfStockIsRejected: a reserve asking more than a SKU has reserves
// nothing of any SKU and its StockRejected (reason and shortages) reaches
// the saga.
func TestOutOfStockIsRejected(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	setStock(t, s.url, "SKU-A", 10)
	setStock(t, s.url, "SKU-B", 1)
	orderID, saga := uuid.NewString(), "saga-"+uuid.NewString()
	r := mustCall(t, http.MethodPost, s.url+"/reservations", "k-"+orderID,
		reserveBody(orderID, saga, item("SKU-A", 2), item("SKU-B", 2), item("SKU-GONE", 1)))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	out, eventID := r.outcome(t)
	require.Equal(t, OutcomeRejected, out.Outcome)
	require.Equal(t, ReasonInsufficientStock, out.Reason)
	require.Equal(t, []Shortage{{SKU: "SKU-B", Requested: 2, Available: 1}, {SKU: "SKU-GONE", Requested: 1, Available: 0}}, out.Shortages)
	require.Equal(t, stockLevel{Available: 10, Reserved: 0}, stockOf(t, s.db, "SKU-A"), "nothing reserved, not even what was there")
	require.Equal(t, stockLevel{Available: 1, Reserved: 0}, stockOf(t, s.db, "SKU-B"))
	require.Equal(t, rows{Requests: 1, Inbox: 1, Events: 1}, countRows(t, s.db), "no reservation row")
	st := waitSaga(t, saga, 1)
	require.Equal(t, handled{EventID: eventID, EventType: EventRejected, Outcome: out}, st.Handled[0])

	get := mustCall(t, http.MethodGet, s.url+"/reservations/"+orderID, "", "")
	require.Equal(t, http.StatusNotFound, get.status)
}

// TestReleaseBeforeReserve: a release for an order holding nothing (the
// saga gave up before the reserve arrived) answers released with no items,
// signals StockReleased, and turns the late reserve into a rejection.
func TestReleaseBeforeReserve(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	setStock(t, s.url, "SKU-A", 3)
	orderID, saga := uuid.NewString(), "saga-"+uuid.NewString()
	rel := mustCall(t, http.MethodPost, s.url+"/reservations/"+orderID+"/release", "rel-"+orderID, `{"workflow_id":"`+saga+`"}`)
	require.Equal(t, http.StatusOK, rel.status, "%s", rel.body)
	out, _ := rel.outcome(t)
	require.Equal(t, Outcome{OrderID: orderID, WorkflowID: saga, Outcome: OutcomeReleased, Items: []Item{}, Reason: ReasonNothingReserved, IdempotencyKey: "rel-" + orderID}, out)
	res := mustCall(t, http.MethodPost, s.url+"/reservations", "res-"+orderID, reserveBody(orderID, saga, item("SKU-A", 1)))
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	resOut, _ := res.outcome(t)
	require.Equal(t, ReasonOrderReleased, resOut.Reason)
	require.Equal(t, stockLevel{Available: 3}, stockOf(t, s.db, "SKU-A"))
	st := waitSaga(t, saga, 2)
	require.Equal(t, []string{EventReleased, EventRejected}, []string{st.Handled[0].EventType, st.Handled[1].EventType})
}

// TestBadRequestsWriteNothing: every malformed request is a 400 (413 for a
// body too large) with a code and a message, and writes no row.
func TestBadRequestsWriteNothing(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	setStock(t, s.url, "SKU-A", 3)
	good := reserveBody("o-1", "saga-1", item("SKU-A", 1))
	big := make([]byte, 70<<10)
	for i := range big {
		big[i] = ' '
	}
	for _, c := range []struct {
		name, path, key, body, code string
	}{
		{"no key", "/reservations", "", good, "missing_idempotency_key"},
		{"non-ASCII key", "/reservations", "ключ", good, "invalid_idempotency_key"},
		{"key too long", "/reservations", strings.Repeat("k", 256), good, "invalid_idempotency_key"},
		{"not JSON", "/reservations", "k1", `{"order_id":`, "invalid_json"},
		{"unknown field", "/reservations", "k2", `{"order_id":"o","workflow_id":"w","items":[],"colour":"red"}`, "invalid_json"},
		{"two objects", "/reservations", "k3", good + good, "invalid_json"},
		{"quantity as a string", "/reservations", "k4", reserveBody("o", "w", `{"sku":"SKU-A","quantity":"1"}`), "invalid_json"},
		{"no order", "/reservations", "k5", reserveBody("", "w", item("SKU-A", 1)), "invalid_request"},
		{"no workflow", "/reservations", "k6", reserveBody("o", "", item("SKU-A", 1)), "invalid_request"},
		{"no items", "/reservations", "k7", reserveBody("o", "w"), "invalid_request"},
		{"zero quantity", "/reservations", "k8", reserveBody("o", "w", item("SKU-A", 0)), "invalid_request"},
		{"negative quantity", "/reservations", "k9", reserveBody("o", "w", item("SKU-A", -2)), "invalid_request"},
		{"SKU twice", "/reservations", "k10", reserveBody("o", "w", item("SKU-A", 1), item("SKU-A", 1)), "invalid_request"},
		{"empty SKU", "/reservations", "k11", reserveBody("o", "w", item("", 1)), "invalid_request"},
		{"release without workflow", "/reservations/o-1/release", "k12", `{}`, "invalid_request"},
		{"release without key", "/reservations/o-1/release", "", `{"workflow_id":"w"}`, "missing_idempotency_key"},
		{"body too large", "/reservations", "k13", `{"order_id":"o"` + string(big) + `}`, "body_too_large"},
	} {
		r := mustCall(t, http.MethodPost, s.url+c.path, c.key, c.body)
		want := http.StatusBadRequest
		if c.code == "body_too_large" {
			want = http.StatusRequestEntityTooLarge
		}
		require.Equal(t, want, r.status, "%s: %s", c.name, r.body)
		require.Equal(t, c.code, r.errorCode(t), c.name)
	}
	require.Equal(t, rows{}, countRows(t, s.db))
	require.Equal(t, stockLevel{Available: 3}, stockOf(t, s.db, "SKU-A"))
	neg := mustCall(t, http.MethodPut, s.url+"/stock/SKU-A", "", `{"available":-1}`)
	require.Equal(t, http.StatusBadRequest, neg.status)
	require.Equal(t, stockLevel{Available: 3}, stockOf(t, s.db, "SKU-A"))
}

// TestConcurrentRetriesReserveOnce: the same request sent at once by eight
// clients under one key reserves once; every answer is the first one's.
func TestConcurrentRetriesReserveOnce(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	setStock(t, s.url, "SKU-A", 100)
	orderID, saga := uuid.NewString(), "saga-"+uuid.NewString()
	body := reserveBody(orderID, saga, item("SKU-A", 7))
	var wg sync.WaitGroup
	replies := make([]reply, 8)
	errs := make([]error, 8)
	for i := range replies {
		wg.Go(func() { replies[i], errs[i] = call(t, http.MethodPost, s.url+"/reservations", "same-key", body) })
	}
	wg.Wait()
	replayed := 0
	for i, r := range replies {
		require.NoError(t, errs[i])
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		require.Equal(t, string(replies[0].body), string(r.body))
		if r.replayed {
			replayed++
		}
	}
	require.Equal(t, len(replies)-1, replayed, "one answer is the first, the others replay it")
	require.Equal(t, stockLevel{Available: 93, Reserved: 7}, stockOf(t, s.db, "SKU-A"))
	require.Equal(t, rows{Reservations: 1, Items: 1, Requests: 1, Inbox: 1, Events: 1}, countRows(t, s.db))
	waitSaga(t, saga, 1)
}

// TestMigrateKeepsItsOwnVersions: Migrate is idempotent, records the
// inventory's versions in inventory_schema_version and the outbox's in
// outflow_schema_version, and creates no goose_db_version.
func TestMigrateKeepsItsOwnVersions(t *testing.T) {
	t.Parallel()
	db, _ := newDB(t)
	require.NoError(t, Migrate(t.Context(), db), "a second Migrate is a no-op")
	var own, outbox int
	var goose bool
	require.NoError(t, db.QueryRow(t.Context(), `SELECT
		(SELECT count(*) FROM inventory_schema_version WHERE version_id > 0 AND is_applied),
		(SELECT count(*) FROM outflow_schema_version WHERE version_id > 0),
		to_regclass('goose_db_version') IS NOT NULL`).Scan(&own, &outbox, &goose))
	require.Equal(t, 1, own)
	require.Positive(t, outbox)
	require.False(t, goose)
}
