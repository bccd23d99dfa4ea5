// Package personal names the values of outflow's workflows that carry a
// customer's personal data, and whose: the payload codec (internal/codec)
// encrypts each of them with that customer's data key, so that forgetting
// the customer (outboxctl forget-customer) leaves them unreadable.
//
// The list is by Go type, checked by TestEveryPersonalFieldIsCovered:
//
//   - handoff.EventInput of an event whose payload has a customer_email
//     (OrderCreated: the address, the shipping address, the order lines);
//   - activities.SendEmailInput (To, and the shipping address of a
//     confirmation);
//   - activities.ProjectOrderResult (CustomerEmail, for the emails after a
//     step).
//
// Every other payload (charges, refunds, projection steps, the saga's
// result, signals, queries) carries ids, amounts and states only and is
// encrypted with the master key. This package links the activities, so only
// the worker (and tests) use it; the relay uses codec.EventInputSubject.
package personal

import (
	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/internal/codec"
)

// Subject is the worker's codec.SubjectFunc.
func Subject(v any) (string, bool) {
	switch x := v.(type) {
	case activities.SendEmailInput:
		return nonEmpty(x.To)
	case *activities.SendEmailInput:
		if x != nil {
			return nonEmpty(x.To)
		}
	case activities.ReserveStockInput:
		return nonEmpty(x.CustomerEmail)
	case *activities.ReserveStockInput:
		if x != nil {
			return nonEmpty(x.CustomerEmail)
		}
	case activities.ProjectOrderResult:
		return nonEmpty(x.CustomerEmail)
	case *activities.ProjectOrderResult:
		if x != nil {
			return nonEmpty(x.CustomerEmail)
		}
	}
	return codec.EventInputSubject(v)
}

func nonEmpty(s string) (string, bool) { return s, s != "" }
