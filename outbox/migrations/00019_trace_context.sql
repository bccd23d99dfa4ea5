-- The outbox's schema (outflow_schema_version): the trace an event was
-- written in, so that what the event causes (the relay's publish, the
-- workflow, its activities) continues the request's trace. Owned by
-- package outbox.

-- +goose Up

-- trace_context: the enqueuing caller's propagation headers (W3C
-- traceparent, tracestate, baggage when present) as a JSON object of
-- strings, written by outbox.Enqueue in the event's transaction and read
-- back by every source into Event.TraceContext. NULL when the caller had
-- no valid span (tracing off): the write then costs nothing more. Never
-- updated; a replay keeps it and links to it (outbox's publish span).
ALTER TABLE outbox_events ADD COLUMN trace_context jsonb;
ALTER TABLE outbox_log ADD COLUMN trace_context jsonb;

-- +goose Down
ALTER TABLE outbox_log DROP COLUMN trace_context;
ALTER TABLE outbox_events DROP COLUMN trace_context;
