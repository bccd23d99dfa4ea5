// Package handoff is the contract between outflow's relay and the
// workflows it starts: the single workflow input ([EventInput]), the
// workflow type names, the default task queue, the OrderId search
// attribute, the cancel signal and status query, and the payment saga's
// result, which the cancel saga reads.
//
// It imports nothing of outflow's but the publisher the relay starts the
// workflows with (outbox/temporalpub, whose [EventInput] the workflows
// take) and nothing of Temporal's but the SDK's search attribute key type,
// so the relay (starter) links it without the workflows, their activities
// and the payment provider's client. outbox/temporalpub does not import it:
// a service outside outflow starts its own workflows without the order
// app's contract. Everything here is recorded in workflow
// histories or relied on by operators (docs/reference.md), so it changes
// only compatibly: fields are added, never renamed.
package handoff
