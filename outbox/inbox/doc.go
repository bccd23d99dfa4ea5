// Package inbox is the consumer side of the outbox: it makes a consumer's
// effect happen once per event although the relay delivers at least once.
//
// # The guarantee
//
// [Inbox.Record] inserts the row (consumer, event ID) into processed_events
// inside the caller's own transaction, the one that applies the effect, and
// says whether the row is new:
//
//	INSERT INTO processed_events (consumer_name, event_id) VALUES (...)
//	ON CONFLICT DO NOTHING RETURNING event_id
//
// The row and the effect commit together or not at all. So once a delivery's
// transaction has committed, every later delivery of that event to that
// consumer is told "not first" and does nothing; a delivery whose
// transaction rolled back left no row, and the next one applies the effect.
// Concurrent deliveries serialise on the row's primary key. This holds for
// effects in the same PostgreSQL database as processed_events; an effect
// elsewhere (a provider's API) cannot join the transaction, and
// [Inbox.Seen] describes the weaker pattern it gets.
//
// A consumer is a name for one effect, not for a service: one event may
// drive several effects (each projection step, each email kind), and each
// has its own name, because each must happen once. The name is part of the
// key, so it must never change.
//
// # Metric
//
// Every duplicate found (Record answering "not first", Seen answering true)
// is counted in inbox_duplicates_total{consumer}, on the registry given to
// [New]. A steady rate is normal with at-least-once delivery; a spike means
// a redelivery storm upstream.
//
// # Retention
//
// The inbox must remember an event for as long as the event can be
// delivered again, including by an operator's replay. outflow's retention
// cleanup (outboxops.Cleanup, run by the starter and by `outboxctl cleanup`)
// deletes a processed_events row only when it is older than the inbox
// retention, which may not be shorter than the events' retention, and its
// event is no longer in the outbox: while the event can be replayed, its
// inbox rows stay. This package adds no cleanup of its own.
//
// # Ownership
//
// processed_events is this package's table: only its statements (inbox.sql)
// insert into it or read it, and outflow's retention cleanup deletes from
// it; TestTableOwnership (in package orders) keeps it so for the whole
// repository.
package inbox
