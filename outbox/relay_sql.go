package outbox

// RelaySQL returns the text of the relay's statement called name in
// relay.sql (RelayClaim, RelayMark, RelayFail, RelayRelease, ...), exactly as
// the relay sends it. It exists for cmd/bench, which drives the relay's SQL
// without the relay to measure what the relay itself adds; applications have
// no use for it. It panics on an unknown name.
func RelaySQL(name string) string { return relayQueries.Get(name) }
