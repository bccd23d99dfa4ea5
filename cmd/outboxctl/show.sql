-- outboxctl show (loaded by show.go).

-- name: ShowEvent
-- Every column of one event, in the table's column order (row_to_json
-- keeps it; jsonb would not), so a column added later shows up unasked.
SELECT row_to_json(e)::text
FROM outbox_events e
WHERE e.event_id = @event_id;
