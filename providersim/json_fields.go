package providersim

// How the simulator's records become JSON field values: Stripe sends null,
// never "", for an optional string that is not set, and an object, never
// null, for metadata, and the simulator's bodies keep those shapes.

// nullable renders an optional string field: null when it is not set.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// copyMap copies a metadata (or email tags) map for rendering or a snapshot.
// The copy is never nil, so it encodes as {} rather than null, and it is the
// caller's own, so a Ledger's caller may change it without touching the store.
func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
