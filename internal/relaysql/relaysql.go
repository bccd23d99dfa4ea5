// Package relaysql holds the outbox relay's statements (relay.sql). Package
// outbox binds them to its own types and runs them; the benchmarks and the
// backlog test bind RelayClaim and RelayMark through
// internal/bench/outboxbench to run them without a Relay. The statements live
// here rather than inside package outbox so that a benchmark imports what it
// measures while no production binary links benchmark code.
package relaysql

import (
	"embed"

	"github.com/outflow/outflow/internal/namedsql"
)

//go:embed relay.sql
var files embed.FS

// Queries are relay.sql's statements by name. Code reaches them through a
// statement bound with [namedsql.Bind], never by text.
var Queries = namedsql.MustLoad(files, "relay.sql")
