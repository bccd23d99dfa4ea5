-- Queries of SendEmail's inbox (send_email.go): one processed_events row per
-- email, consumer 'email.<kind>', written once the provider accepted it.

-- name: EmailInboxSeen
-- Whether this email was already sent by an earlier attempt or run.
SELECT EXISTS (
    SELECT 1 FROM processed_events WHERE consumer_name = $1 AND event_id = $2
);

-- name: EmailInboxInsert
-- After the provider accepted the email. A concurrent attempt that also sent
-- (under the same provider key, so one email) may have inserted it first.
INSERT INTO processed_events (consumer_name, event_id)
VALUES ($1, $2)
ON CONFLICT DO NOTHING;
