-- Statements of the console's benchmark (console_bench_test.go): a large
-- outbox made in one statement.

-- name: BenchFillEvents :exec
-- @events events of aggregates of four events each, 100 ms apart, the
-- newest now: every 100th aggregate's first event quarantined (its last
-- three blocked behind it), every 50th (from the 1st) pending, the rest
-- published.
INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type, schema_version,
                           payload, occurred_at, available_at, published_at, attempt_count, last_error, quarantined_at)
SELECT gen_random_uuid(), 'order', 'bench-' || (g / 4), (g % 4) + 1,
       (ARRAY['OrderCreated', 'OrderPaid', 'OrderShipped', 'OrderClosed'])[(g % 4) + 1], 1,
       '{"bench": true}'::jsonb, x.t, x.t,
       CASE WHEN (g / 4) % 100 = 0 OR (g / 4) % 50 = 1 THEN NULL ELSE x.t + interval '1 second' END,
       CASE WHEN (g / 4) % 100 = 0 AND g % 4 = 0 THEN 20 ELSE 0 END,
       CASE WHEN (g / 4) % 100 = 0 AND g % 4 = 0 THEN
           CASE WHEN g % 800 = 0 THEN 'permanent: bad payload' ELSE 'rpc error: code = Unavailable desc = connection refused' END
       END,
       CASE WHEN (g / 4) % 100 = 0 AND g % 4 = 0 THEN x.t + interval '5 seconds' END
FROM generate_series(0, @events::bigint - 1) AS g,
     LATERAL (SELECT now() - (@events::bigint - g) * interval '100 milliseconds' AS t) AS x;

-- name: BenchAnalyze :exec
ANALYZE outbox_events;
