-- The outbox's schema (outflow_schema_version): retention for the log relay
-- source (issue 27). outbox_log moves from its one DEFAULT partition to
-- range partitions on pos, made ahead of outbox_log_pos, so that retention
-- (outbox.RetainLog, run by the starter's cleanup pass) detaches and drops
-- whole partitions instead of deleting rows: the log stays append-only. The
-- rule a range must pass before it is dropped is model/log.pml's RETIRE
-- (model/README.md, "The log source", T1-T4). Owned by package outbox.

-- +goose Up

-- outbox_log_range_width: the positions of one range, 10,000,000: at 1,000
-- events a second a range fills in under three hours, so a 7-day retention
-- keeps about 60 partitions (few enough for the planner), and a range is
-- dropped at most a few hours after its last event passed the retention.
-- The one definition of the width; changing it affects only ranges made
-- afterwards.
-- +goose StatementBegin
CREATE FUNCTION outbox_log_range_width()
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT 10000000::bigint
$$;
-- +goose StatementEnd

-- outbox_log_ranges: the bookkeeping of outbox_log's partitions, one row per
-- range ever made (a dropped range's row stays: the log's retention horizon
-- is the newest dropped range's sealed_at). [lo, hi) are the positions of
-- the partition name; sealed_at is when retention first saw outbox_log_pos
-- at or past hi (no later nextval returns a position in it) and
-- sealed_xmax the xmax of a snapshot taken after that (every transaction
-- that took a position in the range has an xid below it, as the enqueue
-- takes its xid before its positions); retiring_at is when the range passed
-- the rule (sealed, older than the retention, behind every cursor in key
-- order, owned by no hold), after which no replay may make a hold in it;
-- dropped_at when its partition was dropped.
CREATE TABLE outbox_log_ranges (
    lo          bigint      PRIMARY KEY,
    hi          bigint      NOT NULL,
    name        text        NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    sealed_at   timestamptz,
    sealed_xmax bigint,
    retiring_at timestamptz,
    dropped_at  timestamptz,
    CHECK (hi > lo),
    CHECK ((sealed_at IS NULL) = (sealed_xmax IS NULL)),
    CHECK (retiring_at IS NULL OR sealed_at IS NOT NULL),
    CHECK (dropped_at IS NULL OR retiring_at IS NOT NULL)
);

-- outbox_log_extend: makes ranges until @ahead whole ranges lie beyond the
-- one outbox_log_pos is in, and returns how many it made. Each is made as a
-- table of its own, empty and CHECKed to its range, then attached: ATTACH
-- PARTITION takes only a SHARE UPDATE EXCLUSIVE lock on outbox_log, so the
-- enqueues and the readers go on (CREATE TABLE ... PARTITION OF would take
-- an ACCESS EXCLUSIVE one and queue behind every open writer). There is no
-- DEFAULT partition (DETACH ... CONCURRENTLY refuses a table that has one):
-- an enqueue past the last range fails, hence the gauge
-- outbox_log_ranges_ahead and the alert OutboxLogRangesAhead. Serialised by
-- a transaction-level advisory lock ("outflowR"), so two passes never make
-- the same range.
-- +goose StatementBegin
CREATE FUNCTION outbox_log_extend(ahead integer)
RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    w    bigint := outbox_log_range_width();
    top  bigint;
    want bigint;
    nm   text;
    made integer := 0;
BEGIN
    PERFORM pg_advisory_xact_lock(8031453493739878226);
    SELECT max(hi) INTO top FROM outbox_log_ranges;
    SELECT (last_value / w + 1 + ahead) * w INTO want FROM outbox_log_pos;
    WHILE top < want LOOP
        nm := 'outbox_log_r' || (top / w);
        EXECUTE format('CREATE TABLE %I (LIKE outbox_log INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', nm);
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (pos >= %s AND pos < %s)', nm, nm || '_range', top, top + w);
        EXECUTE format('ALTER TABLE outbox_log ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', nm, top, top + w);
        INSERT INTO outbox_log_ranges (lo, hi, name) VALUES (top, top + w, nm);
        top := top + w;
        made := made + 1;
    END LOOP;
    RETURN made;
END
$$;
-- +goose StatementEnd

-- outbox_log_range_drop: drops the partition of the retiring range that
-- starts at @lo once it is detached (DETACH ... CONCURRENTLY cannot run in a
-- function: RetainLog sends it, as outbox_log_retiring spells it) and
-- records it dropped. false: no such retiring range left.
-- +goose StatementBegin
CREATE FUNCTION outbox_log_range_drop(range_lo bigint)
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
    nm text;
BEGIN
    SELECT name INTO nm FROM outbox_log_ranges
    WHERE lo = range_lo AND retiring_at IS NOT NULL AND dropped_at IS NULL
    FOR UPDATE;
    IF nm IS NULL THEN
        RETURN false;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass(nm)) THEN
        RAISE EXCEPTION 'outbox_log_range_drop: % is still a partition of outbox_log; detach it first', nm;
    END IF;
    EXECUTE format('DROP TABLE IF EXISTS %I', nm);
    UPDATE outbox_log_ranges SET dropped_at = now() WHERE lo = range_lo;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- The default partition becomes the legacy range: every position the
-- sequence handed out so far, up to the next multiple of the width, rows
-- and all (a database an earlier run left behind keeps its events where
-- they are, readable, and retires them by the same rule). This migration's
-- transaction holds outbox_log exclusively, so no position is taken
-- meanwhile.
ALTER TABLE outbox_log DETACH PARTITION outbox_log_default;
ALTER TABLE outbox_log_default RENAME TO outbox_log_r0;

-- +goose StatementBegin
DO $$
DECLARE
    hi bigint;
BEGIN
    SELECT (last_value / outbox_log_range_width() + 1) * outbox_log_range_width() INTO hi FROM outbox_log_pos;
    EXECUTE format('ALTER TABLE outbox_log ATTACH PARTITION outbox_log_r0 FOR VALUES FROM (MINVALUE) TO (%s)', hi);
    INSERT INTO outbox_log_ranges (lo, hi, name) VALUES (0, hi, 'outbox_log_r0');
END
$$;
-- +goose StatementEnd

SELECT outbox_log_extend(2);

-- +goose Down
-- The ranges become one DEFAULT partition again (rows moved: a range's
-- rows cannot be re-attached as the default), as 00012 left it.
CREATE TABLE outbox_log_default_new (LIKE outbox_log INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
INSERT INTO outbox_log_default_new SELECT * FROM outbox_log;
-- +goose StatementBegin
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT name FROM outbox_log_ranges WHERE dropped_at IS NULL LOOP
        EXECUTE format('DROP TABLE %I', r.name);
    END LOOP;
END
$$;
-- +goose StatementEnd
ALTER TABLE outbox_log_default_new RENAME TO outbox_log_default;
ALTER TABLE outbox_log ATTACH PARTITION outbox_log_default DEFAULT;
DROP FUNCTION outbox_log_range_drop(bigint);
DROP FUNCTION outbox_log_extend(integer);
DROP TABLE outbox_log_ranges;
DROP FUNCTION outbox_log_range_width();
