-- The activities' own statements (loaded by sql.go): SendEmail's inbox, one
-- processed_events row per email, consumer 'email.<kind>', written once the
-- provider accepted it. The order projection's statements belong to package
-- orders, which owns the orders table.

-- name: EmailInboxSeen
-- Whether this email was already sent by an earlier attempt or run.
SELECT EXISTS (
    SELECT 1 FROM processed_events WHERE consumer_name = @consumer AND event_id = @event_id
);

-- name: EmailInboxInsert
-- After the provider accepted the email. A concurrent attempt that also sent
-- (under the same provider key, so one email) may have inserted it first.
INSERT INTO processed_events (consumer_name, event_id)
VALUES (@consumer, @event_id)
ON CONFLICT DO NOTHING;
