package orderhttp

import (
	"encoding/json"
	"net/http"
)

// Error codes of the API besides the validation codes of package orders.
const (
	codeInvalidJSON          = "invalid_json"
	codeInvalidType          = "invalid_type"
	codeUnknownField         = "unknown_field"
	codeBodyTooLarge         = "body_too_large"
	codeUnsupportedMedia     = "unsupported_media_type"
	codeUnauthorized         = "unauthorized"
	codeNotFound             = "not_found"
	codeMethodNotAllowed     = "method_not_allowed"
	codeOrderNotFound        = "order_not_found"
	codeInvalidOrderID       = "invalid_order_id"
	codeInvalidIdemKey       = "invalid_idempotency_key"
	codeIdempotencyKeyReused = "idempotency_key_reused"
	codeAlreadyCancelled     = "already_cancelled"
	codeDatabaseUnavailable  = "database_unavailable"
	codeInternal             = "internal_error"
)

// apiError is an error response: its HTTP status and the JSON body's fields.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.Status, struct {
		Error *apiError `json:"error"`
	}{e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only our own response types get here; they always marshal.
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
