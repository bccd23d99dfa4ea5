// Package codec keeps personal data out of Temporal histories: a payload
// codec (AES-256-GCM, a key id in each payload's metadata, zlib before
// encryption where it pays) composed with the SDK's
// converter.NewCodecDataConverter, per-customer data keys wrapped by the
// master keys (so one customer can be forgotten), and the codec server's
// HTTP handler (the SDK's converter.NewPayloadCodecHTTPHandler, with bearer
// auth and CORS for the Web UI).
//
// Keys: OUTFLOW_CODEC_KEYS (or the file OUTFLOW_CODEC_KEYS_FILE) holds
// comma-separated KEY_ID:BASE64_32_BYTES master keys; the first encrypts,
// all decrypt, so a key rotates by prepending the new one and dropping the
// old one once no history (and no customer key) needs it. Unset: no
// encryption. Errors and logs name key ids, never keys.
//
// Customers: a value carrying a customer's personal data (the SubjectFunc
// says which, by Go type: the OrderCreated workflow input, an email's input,
// the projection's result) is encrypted with that customer's data key,
// created on first use in the customer_keys table and wrapped by the
// primary master key. Forget deletes it and writes the audit row: every
// history of that customer becomes unreadable, the rest stays readable.
// Encoding reads the key from the store at every encode (never from a
// cache), so after the erasure commits no process encrypts with it: the
// customer's next payload gets a new key.
//
// docs/privacy.md explains the design and what it does not cover.
package codec
