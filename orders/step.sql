-- Statements of the order projection's steps (step.go, ApplyStepTx). Every
-- statement runs in the one transaction that also writes the inbox row
-- (package inbox, Inbox.Record). None reads outbox_events: retention cleanup
-- deletes its rows while orders still get late steps (a cancel long after the
-- order), so the order row alone must say where the order's stream stands.

-- name: StepLockOrder :one
-- Serialises every step of one order (and its skips, see SettleSkipped).
-- The event ids and their sequences give a step that carries no sequence
-- its place in the stream.
SELECT status, applied_sequence, customer_email,
       created_event_id, created_sequence, cancel_event_id, cancel_event_sequence
FROM orders
WHERE id = @id
FOR UPDATE;

-- name: StepApply :exec
-- @final_sequence is the event's sequence on its final step, 0 otherwise;
-- GREATEST keeps applied_sequence monotonic. orders_settled_through
-- (migration 00007) then moves it past every skipped sequence that directly
-- follows, which an operator may have skipped before this event applied.
UPDATE orders
SET status            = @status,
    payment_intent_id = COALESCE(@payment_intent_id, payment_intent_id),
    refund_id         = COALESCE(@refund_id, refund_id),
    applied_sequence  = orders_settled_through(GREATEST(applied_sequence, @final_sequence), skipped_sequences),
    updated_at        = now()
WHERE id = @id;

-- name: StepMark :exec
-- The unsequenced steps (disputed, refund_failed, migration 00011): a fact
-- of the order's payment stream, recorded once (the first time is kept);
-- status and applied_sequence stay as they are.
UPDATE orders
SET disputed_at      = CASE WHEN @disputed::boolean THEN COALESCE(disputed_at, now()) ELSE disputed_at END,
    dispute_id       = CASE WHEN @disputed::boolean THEN COALESCE(dispute_id, @dispute_id::text) ELSE dispute_id END,
    refund_failed_at = CASE WHEN @refund_failed::boolean THEN COALESCE(refund_failed_at, now()) ELSE refund_failed_at END,
    updated_at       = now()
WHERE id = @id;
