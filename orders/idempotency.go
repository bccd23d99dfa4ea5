package orders

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
)

// MaxIdempotencyKeyLength is the longest Idempotency-Key accepted, Stripe's
// limit: long enough for any UUID or hash a client derives, short enough to
// keep the primary key index small.
const MaxIdempotencyKeyLength = 255

// ErrInvalidIdempotencyKey is returned for an empty, over-long or
// non-printable Idempotency-Key.
var ErrInvalidIdempotencyKey = fmt.Errorf("orders: an Idempotency-Key has 1 to %d printable ASCII characters", MaxIdempotencyKeyLength)

// ValidateIdempotencyKey checks a client's Idempotency-Key.
func ValidateIdempotencyKey(key string) error {
	if key == "" || len(key) > MaxIdempotencyKeyLength {
		return ErrInvalidIdempotencyKey
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return ErrInvalidIdempotencyKey
		}
	}
	return nil
}

// StoredResponse is the HTTP response kept with an Idempotency-Key.
type StoredResponse struct {
	// Status is the HTTP status of the first response (201).
	Status int
	// Body is the first response's JSON body.
	Body json.RawMessage
	// Replayed is true when the response comes from an earlier request with
	// the same key and this call wrote nothing.
	Replayed bool
}

// errKeyTaken makes the transaction roll back when a concurrent request
// committed the same key first.
var errKeyTaken = errors.New("orders: idempotency key taken by a concurrent request")

// CreateOrderIdempotent is [CreateOrder] keyed by a client's Idempotency-Key.
// The key, the request's fingerprint and the response are stored in the
// order's own transaction, so they exist exactly when the order does. A
// repeat of the same request returns the stored response with Replayed set
// and writes nothing; the same key with a different request is
// ErrIdempotencyKeyReused. The key must pass [ValidateIdempotencyKey].
func CreateOrderIdempotent(ctx context.Context, db DB, key string, p CreateOrderParams, opts ...Option) (StoredResponse, error) {
	o := collect(opts)
	if err := ValidateIdempotencyKey(key); err != nil {
		return StoredResponse{}, err
	}
	p, _, err := p.Validate()
	if err != nil {
		return StoredResponse{}, err
	}
	fp := fingerprint(p)
	// The common retry finds the key committed and needs no transaction.
	if stored, found, err := lookupKey(ctx, db, key, fp); found || err != nil {
		return stored, err
	}
	ids, err := newOrderIDs()
	if err != nil {
		return StoredResponse{}, err
	}
	var stored StoredResponse
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		res, err := createOrderTx(ctx, tx, p, ids, o.enqueuer)
		if err != nil {
			return err
		}
		body, err := json.Marshal(res)
		if err != nil {
			return fmt.Errorf("orders: marshal response: %w", err)
		}
		stored = StoredResponse{Status: http.StatusCreated, Body: body}
		_, err = qInsertIdempotencyKey.Value(ctx, tx, insertKeyArgs{
			Key: key, RequestFingerprint: fp, ResponseStatus: stored.Status, ResponseBody: body, OrderID: ids.order,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return errKeyTaken
		}
		if err != nil {
			return fmt.Errorf("orders: store idempotency key: %w", err)
		}
		return o.beforeCommit(ctx)
	})
	if errors.Is(err, errKeyTaken) {
		// Our order rolled back; the winner's response is committed now.
		stored, found, err := lookupKey(ctx, db, key, fp)
		if err == nil && !found {
			err = fmt.Errorf("orders: idempotency key %q conflicted but is gone; retry the request", key)
		}
		return stored, err
	}
	if err != nil {
		return StoredResponse{}, err
	}
	return stored, nil
}

// lookupKey returns the response stored under key, found=false if there is
// none, or ErrIdempotencyKeyReused if the key belongs to another request.
func lookupKey(ctx context.Context, db DB, key string, fp []byte) (StoredResponse, bool, error) {
	k, err := qGetIdempotencyKey.One(ctx, db, keyArgs{Key: key})
	if errors.Is(err, pgx.ErrNoRows) {
		return StoredResponse{}, false, nil
	}
	if err != nil {
		return StoredResponse{}, false, fmt.Errorf("orders: look up idempotency key: %w", err)
	}
	if !bytes.Equal(k.Fingerprint, fp) {
		return StoredResponse{}, true, ErrIdempotencyKeyReused
	}
	return StoredResponse{Status: k.Status, Body: k.Body, Replayed: true}, true, nil
}

// storedKey is an idempotency_keys row as lookupKey reads it.
type storedKey struct {
	Fingerprint []byte          `db:"request_fingerprint"`
	Status      int             `db:"response_status"`
	Body        json.RawMessage `db:"response_body"`
}

// fingerprint is the SHA-256 of the canonical request: the normalized
// parameters marshalled by encoding/json (fixed field order, no
// insignificant whitespace), so formatting, key order in the client's JSON
// and the currency's letter case do not make two equal requests differ.
// The prefix versions the scheme.
func fingerprint(p CreateOrderParams) []byte {
	body, err := json.Marshal(p)
	if err != nil {
		panic(fmt.Sprintf("orders: marshal CreateOrderParams: %v", err)) // strings and ints only
	}
	h := sha256.New()
	h.Write([]byte("outflow POST /orders v1\n"))
	h.Write(body)
	return h.Sum(nil)
}
