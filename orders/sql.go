package orders

// SQL returns the text of the statement called name in queries.sql (e.g.
// InsertOrder), exactly as this package sends it. It exists for cmd/bench,
// whose order-only transaction must run the same insert as [CreateOrderTx] to
// measure what the outbox adds; applications have no use for it. It panics on
// an unknown name.
func SQL(name string) string { return queries.Get(name) }
