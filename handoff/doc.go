// Package handoff is the contract between outflow's relay and the
// workflows it starts: the single workflow input ([EventInput]), the
// workflow type names, the default task queue, the OrderId search
// attribute, the cancel signal and status query, and the payment saga's
// result, which the cancel saga reads.
//
// It imports only the standard library and the publisher's envelope
// (outbox/temporalpub/wire, whose [EventInput] the workflows take; itself
// standard library only), so anything links it without the Temporal SDK,
// the workflows, their activities or the payment provider's client; an
// architecture test (internal/architecture) keeps it so. The typed key of
// the OrderId attribute, which needs the SDK, is internal/routes's
// (OrderIDKey). outbox/temporalpub does not import this package:
// a service outside outflow starts its own workflows without the order
// app's contract. Everything here is recorded in workflow
// histories or relied on by operators (docs/reference.md), so it changes
// only compatibly: fields are added, never renamed.
package handoff
