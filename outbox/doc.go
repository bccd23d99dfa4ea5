// Package outbox is outflow's transactional outbox: the write side that puts
// an immutable event into the caller's own PostgreSQL transaction, and the
// relay that hands committed events to a [Publisher] (Temporal, in outflow),
// at least once, one lane per aggregate.
//
// # The guarantee
//
// [Enqueue] writes events inside the transaction that changes the business
// rows, so an event exists if and only if that change committed. The relay
// claims committed events with a durable lease, publishes them outside any
// database transaction and marks them published only after the publisher's
// acknowledgement. A relay that dies between the acknowledgement and the mark
// leaves the event to be published again: delivery is at least once, and
// consumers make their effects idempotent with the event's immutable ID.
//
// # Ordering
//
// Each aggregate (an order, say) has its own gap-free sequence, allocated in
// the enqueuing transaction under the aggregate's lock. The relay only claims
// the lowest unpublished sequence of an aggregate, so an event never overtakes
// an unfinished predecessor; there is no order across aggregates. An
// operator's replay (outboxops.Replay) makes an earlier event unpublished
// again: the replayed event then also waits for a later one in flight, and
// the replay and the claim fence each other (the replay waits for claims in flight, a claim
// re-checks its batch in a fresh snapshot), so an aggregate has at most one
// event in flight even under READ COMMITTED.
//
// # One relay, three sources
//
// [NewRelay] makes the one relay; its source is a value of [RelayConfig]:
// by default the one the database records (poll, cdc or log; `outboxctl
// source set` changes it while producers and relays run, and [Enqueue]
// writes where it says). Every source shares the relay's loop (pipeline,
// breaker, throttle, attempts, backoff, quarantine, metrics) and differs
// only in how it finds each lane's next events and records their delivery.
// poll claims committed events of outbox_events with a lease. cdc reads
// them from PostgreSQL's logical replication log (a slot on the
// publication of outbox_events inserts, wal_level=logical), sorts each
// received batch with one statement, and confirms the slot's position only
// over a contiguous prefix of settled transactions; what the stream cannot
// publish in order goes to its sweeper, a poll relay that leaves young
// events to the stream. log reads an append-only, partitioned outbox_log
// by cursor, and puts an order in trouble under a hold. poll and cdc write
// the same columns; outboxops acts on whichever table holds an event.
//
// # Schema
//
// [Migrate] creates the outbox's own tables and nothing of the application's,
// recording its versions in outflow_schema_version beside whatever the
// application's migrations use (goose's goose_db_version included), and the
// publication the cdc source streams; [CheckSchema] lets a binary refuse a
// database it was not built for.
//
// # Operations
//
// What an operator does to an outbox (status, list, retry, skip, replay,
// retention cleanup) is package outbox/outboxops, which cmd/outboxctl
// exposes; docs/operations.md is the operator's guide.
//
// # Tracing
//
// [Enqueue] stores the caller's OpenTelemetry trace context (W3C
// traceparent, tracestate, baggage) with the event, in its transaction
// (Event.TraceContext; nothing when the context has no span), and every
// source's publish is a span of that trace: the request that wrote an
// event and the workflow it started are one trace. An operator's replay
// starts a new trace linked to the original instead (see
// RelayConfig.TracerProvider). The package never reads the environment:
// it uses the propagator and tracer provider of its configuration, or
// otel's globals, which a main sets up from the standard OTEL_* variables.
// The Temporal publisher hands the span on through Temporal's headers when
// the client has go.temporal.io/sdk/contrib/opentelemetry's tracing
// interceptor; natspub writes it into the message's headers.
//
// # Testing
//
// A service's tests assert what its transactions enqueued, and run a relay
// against a recording publisher, with package outbox/outboxtest; consumers
// deduplicate deliveries with package inbox.
package outbox
