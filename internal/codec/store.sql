-- The customer key store (loaded by store.go): customer_keys and its audit,
-- customer_key_erasures (migration 00008). Owned by package codec.

-- name: KeyBySubject
-- The encoder's read, at every encode. FOR KEY SHARE waits for a
-- forget-customer in flight (its DELETE holds the row): after its commit the
-- row is gone and the encoder makes a new key, after a rollback it reads the
-- same key. Encoders do not block one another.
SELECT key_id, wrapped_dek, wrapping_key_id, created_at
FROM customer_keys
WHERE subject_hash = @subject_hash
FOR KEY SHARE;

-- name: InsertKey
-- The first encoder of a customer's data creates the key; a concurrent one
-- loses the race quietly and reads the winner's (KeyBySubject).
INSERT INTO customer_keys (key_id, subject_hash, wrapped_dek, wrapping_key_id)
VALUES (@key_id, @subject_hash, @wrapped_dek, @wrapping_key_id)
ON CONFLICT (subject_hash) DO NOTHING
RETURNING created_at;

-- name: KeyByID
SELECT subject_hash, wrapped_dek, wrapping_key_id, created_at
FROM customer_keys
WHERE key_id = @key_id;

-- name: ErasureOfKey
-- When a key that no longer exists was erased, for the decoder's error.
SELECT erased_at
FROM customer_key_erasures
WHERE key_id = @key_id
ORDER BY id DESC
LIMIT 1;

-- name: DeleteKey
DELETE FROM customer_keys
WHERE subject_hash = @subject_hash
RETURNING key_id, created_at;

-- name: RecordErasure
INSERT INTO customer_key_erasures (subject_hash, key_id, key_created_at, erased_by, reason)
VALUES (@subject_hash, @key_id, @key_created_at, @erased_by, @reason)
RETURNING id, erased_at;

-- name: ErasuresOfSubject
-- Earlier requests for the same address, newest first.
SELECT key_id, erased_at, erased_by
FROM customer_key_erasures
WHERE subject_hash = @subject_hash
ORDER BY id DESC;
