package codec

import (
	"crypto/sha256"
	"encoding/json"
	"strings"

	"github.com/outflow/outflow/handoff"
)

// SubjectFunc says whose personal data a value carries: the customer's
// email address, and true; "", false for a value without personal data. The
// data converter encrypts a value it returns true for with that customer's
// data key, everything else with the master key.
type SubjectFunc func(v any) (subject string, ok bool)

// NormalizeEmail is the form of an address a customer's key is found by:
// trimmed and lower-cased, so "Ada@Example.com " and "ada@example.com" are
// one customer.
func NormalizeEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// SubjectHash is the key store's handle on a customer: SHA-256 of the
// normalised address under a fixed prefix. It is what customer_keys and the
// erasure audit keep, never the address.
func SubjectHash(email string) []byte {
	h := sha256.Sum256([]byte("outflow-customer-v1\x00" + NormalizeEmail(email)))
	return h[:]
}

// EventInputSubject is the relay's [SubjectFunc]: a workflow input
// ([handoff.EventInput]) whose event payload holds a customer_email (an
// OrderCreated, of any schema version) carries that customer's personal
// data: the address, the shipping address, the order lines.
func EventInputSubject(v any) (string, bool) {
	switch in := v.(type) {
	case handoff.EventInput:
		return payloadSubject(in.Payload)
	case *handoff.EventInput:
		if in != nil {
			return payloadSubject(in.Payload)
		}
	}
	return "", false
}

func payloadSubject(payload []byte) (string, bool) {
	if len(payload) == 0 {
		return "", false
	}
	var p struct {
		CustomerEmail string `json:"customer_email"`
	}
	if json.Unmarshal(payload, &p) != nil || strings.TrimSpace(p.CustomerEmail) == "" {
		return "", false
	}
	return p.CustomerEmail, true
}

// Subjects combines SubjectFuncs: the first that recognises a value wins.
func Subjects(fs ...SubjectFunc) SubjectFunc {
	return func(v any) (string, bool) {
		for _, f := range fs {
			if f == nil {
				continue
			}
			if s, ok := f(v); ok {
				return s, true
			}
		}
		return "", false
	}
}
