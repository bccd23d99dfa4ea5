package providersim

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Stripe's error types; stripe-go maps each to a typed error (CardError,
// IdempotencyError, ...), so the exact strings matter.
const (
	errorTypeAPI            = "api_error"
	errorTypeCard           = "card_error"
	errorTypeIdempotency    = "idempotency_error"
	errorTypeInvalidRequest = "invalid_request_error"
)

// errorEnvelope is the body of every Stripe error response: {"error": {...}}.
type errorEnvelope struct {
	Error *stripeError `json:"error"`
}

// stripeError is Stripe's error object, with the fields stripe-go's
// stripe.Error decodes.
type stripeError struct {
	Charge        string             `json:"charge,omitempty"`
	Code          string             `json:"code,omitempty"`
	DeclineCode   string             `json:"decline_code,omitempty"`
	DocURL        string             `json:"doc_url,omitempty"`
	Message       string             `json:"message"`
	Param         string             `json:"param,omitempty"`
	PaymentIntent *paymentIntentJSON `json:"payment_intent,omitempty"`
	PaymentMethod *paymentMethodJSON `json:"payment_method,omitempty"`
	Type          string             `json:"type"`

	// status is the HTTP status the error is sent with.
	status int
}

// invalidRequest is the common 400 invalid_request_error.
func invalidRequest(code, param, message string) *stripeError {
	return &stripeError{status: http.StatusBadRequest, Type: errorTypeInvalidRequest, Code: code, Param: param, Message: message}
}

// resourceMissing is Stripe's answer for an id that does not exist.
func resourceMissing(param, message string) *stripeError {
	e := invalidRequest("resource_missing", param, message)
	e.status = http.StatusNotFound
	return e
}

// response renders the error as a complete Stripe response.
func (e *stripeError) response() response {
	if e.Code != "" && e.DocURL == "" {
		e.DocURL = "https://stripe.com/docs/error-codes/" + strings.ReplaceAll(e.Code, "_", "-")
	}
	status := e.status
	if status == 0 {
		status = http.StatusBadRequest
	}
	return stripeJSON(status, errorEnvelope{Error: e})
}

// stripeServerError is the api_error an error_500 fault answers with.
func stripeServerError() response {
	return stripeJSON(http.StatusInternalServerError, errorEnvelope{Error: &stripeError{
		Type:    errorTypeAPI,
		Message: "An unknown error occurred (injected by the provider simulator: error_500).",
	}})
}

// resendError renders Resend's error object: {"statusCode", "message", "name"}.
func resendError(status int, name, message string) response {
	b, _ := json.Marshal(struct {
		StatusCode int    `json:"statusCode"`
		Message    string `json:"message"`
		Name       string `json:"name"`
	}{status, message, name})
	return response{status: status, body: b}
}

// simError is the body of a rejected /_sim request.
type simError struct {
	Error string `json:"error"`
}
