// Package orders is the order service's domain: the commands that create and
// cancel an order, the read model that shows one, the events an order emits
// (events.go), and the state machine the workflows move an order through
// ([ApplyStep]).
//
// # One owner per table
//
// This package is the only one that writes the orders table: its statements
// are in its .sql files, loaded in one place (sql.go), and the workflows'
// activities change an order only through [ApplyStep]. It reads the outbox's
// rows only through package outbox ([outbox.EventSequence],
// [outbox.AggregateEvents]); TestTableOwnership keeps it so for the whole
// repository.
//
// # One transaction per command
//
// [CreateOrder] and [CancelOrder] each run in one PostgreSQL transaction that
// validates the command, changes the orders row and writes the matching
// outbox event with [outbox.Enqueue]. Either both rows commit or neither
// does, so every committed change has exactly one durable event and a
// rolled-back change has none (invariants 1 and 2 of docs/reference.md). The Tx
// forms ([CreateOrderTx], [CancelOrderTx]) let a caller join its own
// transaction; the plain forms open one with pgx.BeginFunc and are where the
// orders.before_commit failpoint sits, because only they know that COMMIT
// comes next.
//
// # Validation and amounts
//
// [CreateOrderParams.Validate] is pure: it never touches the database, so a
// rejected request cannot write anything. It checks every field (e-mail,
// ISO 4217 currency from an embedded copy of the official list, 1 to 100
// items, SKU length and charset, positive quantities and unit amounts) and
// computes the total server-side in minor units, refusing a total that does
// not fit the bigint column instead of wrapping around.
//
// # Request idempotency
//
// [CreateOrderIdempotent] stores the client's Idempotency-Key, a SHA-256
// fingerprint of the normalized request and the response in the order's own
// transaction. A retry with the same key and the same request gets the stored
// response and writes nothing; the same key with another request is
// [ErrIdempotencyKeyReused]. Two concurrent requests with one key create one
// order: the second INSERT of the key waits for the first transaction and,
// once it commits, rolls its own order back and replays the stored response.
//
// # Cancelling
//
// [CancelOrder] locks the order row, so concurrent cancels serialise: the
// first writes the OrderCancelled event, the others see cancel_event_id set
// and return the first cancel's event without writing anything.
//
// # The order row is the projection's record
//
// The workflows project status changes onto the order row with [ApplyStep]
// (or [ApplyStepTx] in a caller's transaction), one [Step] of one event at a
// time: through the inbox (package inbox, consumer [ConsumerName]), by
// the transition table (a step the status does not allow is an
// [*IllegalTransitionError]), and strictly in the order's event sequence
// (applied_sequence; a later event waits with [ErrSequenceGap]). Everything
// this needs is on the row itself, never in outbox_events, whose rows
// retention cleanup deletes: the sequences of the order's two events
// (created_sequence, written by [CreateOrderTx]; cancel_event_sequence, by
// [CancelOrderTx]), which place a step that carries no sequence, and the
// sequences an operator skipped (skipped_sequences). [SettleSkippedTx], run
// in the skip's own transaction, records a skipped sequence and moves
// applied_sequence past it, so the order's later events do not wait for it
// forever. [State] is the row as the workflows consult it before charging.
package orders
