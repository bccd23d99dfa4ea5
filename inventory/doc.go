// Package inventory is outflow's second service, the worked example of a
// service that adopts the outbox with outflow's public packages alone
// (outbox, outbox/temporalpub, inbox, failpoints): it holds stock per SKU
// in a PostgreSQL database of its own, reserves and releases it for orders
// over HTTP, and tells each order's saga what it did by signal.
//
// Every reserve or release is one transaction holding the reservation's
// change, an inbox row (package inbox, keyed by the request's
// Idempotency-Key), the answer stored under that key, and an outbox event
// (StockReserved, StockRejected or StockReleased); the answer is written
// only after the commit. The relay (outbox.NewRelay with the temporalpub
// publisher of [Routes]) delivers each event as a signal to the workflow
// the reserve request named, the saga, which receives them through package
// eventsignal, each event once.
//
// The binary is cmd/inventory; docs/inventory.md is the guide and
// docs/reference.md lists its settings, endpoints, failpoint and events.
package inventory
