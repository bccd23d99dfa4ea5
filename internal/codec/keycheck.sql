-- The start-up check of the master keys against the customer keys
-- (loaded by keycheck.go, owned by package codec).

-- name: CustomerKeyTableExists
-- False on a database the migrations have not reached yet: nothing to check.
SELECT to_regclass('customer_keys') IS NOT NULL;

-- name: SampleKeyOfMasterKey
-- One customer key wrapped by this master key, if any: the check unwraps it.
SELECT key_id, wrapped_dek
FROM customer_keys
WHERE wrapping_key_id = @wrapping_key_id
LIMIT 1;

-- name: CustomerKeysOfOtherMasterKeys
-- The master keys, not among the configured ones, that wrapped customer
-- keys here, and how many they wrapped.
SELECT coalesce(string_agg(DISTINCT wrapping_key_id, ', ' ORDER BY wrapping_key_id), '') AS others, count(*) AS count
FROM customer_keys
WHERE wrapping_key_id <> ALL (@configured::text[]);
