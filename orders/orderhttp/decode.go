package orderhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/outflow/outflow/orders"
)

// checkJSONContentType accepts application/json with any parameters.
func checkJSONContentType(contentType string) *apiError {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "application/json" {
		return &apiError{Status: http.StatusUnsupportedMediaType, Code: codeUnsupportedMedia,
			Message: "send the body as JSON with Content-Type: application/json"}
	}
	return nil
}

// decodeCreateOrder reads exactly one JSON object of the create-order shape
// from body: unknown fields, wrong types and trailing data are rejected.
// It is pure (no database, no globals), which is what lets the fuzz test
// call it directly; body should already be limited by http.MaxBytesReader,
// whose error becomes a 413.
func decodeCreateOrder(body io.Reader) (orders.CreateOrderParams, *apiError) {
	var p orders.CreateOrderParams
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return orders.CreateOrderParams{}, decodeError(err)
	}
	// A second value (or garbage) after the object is as suspicious as an
	// unknown field: the client and server would disagree on the request.
	var extra json.RawMessage
	err := dec.Decode(&extra)
	var maxBytes *http.MaxBytesError
	switch {
	case err == io.EOF:
		return p, nil
	case errors.As(err, &maxBytes):
		return orders.CreateOrderParams{}, decodeError(err)
	}
	return orders.CreateOrderParams{}, &apiError{Status: http.StatusBadRequest, Code: codeInvalidJSON,
		Message: "the body must hold exactly one JSON object; found data after it"}
}

func decodeError(err error) *apiError {
	var (
		maxBytes *http.MaxBytesError
		syntax   *json.SyntaxError
		typ      *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &maxBytes):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Code: codeBodyTooLarge,
			Message: fmt.Sprintf("the body exceeds %d bytes", maxBytes.Limit)}
	case errors.Is(err, io.EOF):
		return &apiError{Status: http.StatusBadRequest, Code: codeInvalidJSON, Message: "the body is empty; send a JSON object"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &apiError{Status: http.StatusBadRequest, Code: codeInvalidJSON, Message: "the JSON body ends early"}
	case errors.As(err, &syntax):
		return &apiError{Status: http.StatusBadRequest, Code: codeInvalidJSON,
			Message: fmt.Sprintf("malformed JSON at byte %d: %v", syntax.Offset, syntax)}
	case errors.As(err, &typ):
		if typ.Field == "" {
			return &apiError{Status: http.StatusBadRequest, Code: codeInvalidType, Message: "the body must be a JSON object"}
		}
		return &apiError{Status: http.StatusBadRequest, Code: codeInvalidType, Field: typ.Field,
			Message: fmt.Sprintf("%s must be a JSON %s that fits the field, got %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)}
	}
	// encoding/json reports an unknown field only as text.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return &apiError{Status: http.StatusBadRequest, Code: codeUnknownField, Field: name,
			Message: fmt.Sprintf("unknown field %q; the fields are customer_email, currency, payment_method, items (sku, quantity, unit_amount) "+
				"and the optional shipping_address (name, line1, line2, city, postal_code, country)", name)}
	}
	return &apiError{Status: http.StatusBadRequest, Code: codeInvalidJSON, Message: "cannot decode the JSON body: " + err.Error()}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "int64", "int", "int32":
		return "integer"
	case "slice":
		return "array"
	case "struct":
		return "object"
	}
	return goKind
}
