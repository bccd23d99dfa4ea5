package orders

import (
	"errors"
	"fmt"
)

// ErrOrderNotFound is returned when no order has the given id.
var ErrOrderNotFound = errors.New("orders: order not found")

// ErrIdempotencyKeyReused is returned when an Idempotency-Key that already
// belongs to one request is sent with a different request. The client must
// use a new key for a new request.
var ErrIdempotencyKeyReused = errors.New("orders: idempotency key was already used with a different request")

// ErrCancelEventPurged is returned by a repeated cancel when the first
// cancel's outbox event has been deleted by retention cleanup, so its
// sequence can no longer be reported. The order stays cancelled.
var ErrCancelEventPurged = errors.New("orders: order was cancelled long ago and its cancel event has been cleaned up")

// Validation error codes: what a client can switch on.
const (
	// CodeMissingField: a mandatory field is absent, null or empty.
	CodeMissingField = "missing_field"
	// CodeInvalidField: a field is present but malformed or out of range.
	CodeInvalidField = "invalid_field"
	// CodeUnknownCurrency: a well-formed code that is not in ISO 4217.
	CodeUnknownCurrency = "unknown_currency"
	// CodeAmountTooLarge: the order total does not fit in 64 bits.
	CodeAmountTooLarge = "amount_too_large"
)

// ValidationError says which field of a command is wrong and why. Commands
// return it before touching the database.
type ValidationError struct {
	// Field is the field's JSON path, e.g. "items[2].sku".
	Field string
	// Code is one of the Code* constants.
	Code string
	// Message says what a valid value looks like.
	Message string
}

// Error implements error.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("orders: invalid %s: %s", e.Field, e.Message)
}

func invalid(field, code, format string, args ...any) *ValidationError {
	return &ValidationError{Field: field, Code: code, Message: fmt.Sprintf(format, args...)}
}
