-- The order app's schema (outflow_orders_schema_version), outflow's
-- migration 00008 as it was: customer_keys and customer_key_erasures are
-- written only by internal/codec, the order app's payload codec (its
-- starter's and worker's Temporal clients, codecserver, outboxctl
-- forget-customer), not by the outbox library.

-- +goose Up

-- customer_keys: one data key (DEK) per customer, for the payload codec
-- (internal/codec, docs/privacy.md). Every Temporal payload that carries a
-- customer's personal data (the OrderCreated input, the emails' inputs, the
-- projection's result with the address to write to) is encrypted with its
-- customer's DEK; every other payload with the master key. The DEK is
-- stored wrapped (AES-256-GCM) by a master key of OUTFLOW_CODEC_KEYS, so
-- this table alone reveals nothing, and deleting a row (outboxctl
-- forget-customer) makes every history of that customer unreadable while
-- the rest stays readable. Owned by package internal/codec.
--
--   key_id          the id in each payload's metadata ("customer/<key_id>");
--                   random, so it says nothing about the customer
--   subject_hash    SHA-256 of the normalised email, under a fixed prefix:
--                   how an encoder finds the customer's key
--   wrapped_dek     nonce || AES-256-GCM(master key, DEK)
--   wrapping_key_id the master key that wrapped it (rotation: the newest
--                   wraps, any configured one unwraps)
CREATE TABLE customer_keys (
    key_id          uuid        PRIMARY KEY,
    subject_hash    bytea       NOT NULL UNIQUE CHECK (length(subject_hash) = 32),
    wrapped_dek     bytea       NOT NULL,
    wrapping_key_id text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- customer_key_erasures: the audit of outboxctl forget-customer, one row per
-- request, kept for good. It holds no key material and no address: the
-- subject hash lets an auditor confirm that a given address was forgotten
-- (and when, by whom, why). key_id is null when the customer had no key
-- (nothing of theirs was ever encrypted, or it was forgotten before).
CREATE TABLE customer_key_erasures (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subject_hash   bytea       NOT NULL CHECK (length(subject_hash) = 32),
    key_id         uuid,
    key_created_at timestamptz,
    erased_at      timestamptz NOT NULL DEFAULT now(),
    erased_by      text        NOT NULL CHECK (erased_by <> ''),
    reason         text        NOT NULL CHECK (reason <> '')
);
CREATE INDEX customer_key_erasures_key_id ON customer_key_erasures (key_id) WHERE key_id IS NOT NULL;
CREATE INDEX customer_key_erasures_subject ON customer_key_erasures (subject_hash);

-- +goose Down
DROP TABLE customer_key_erasures;
DROP TABLE customer_keys;
