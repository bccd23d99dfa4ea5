// Package relaycmd is the starter, the outbox relay's binary, as a library:
// its settings read from the environment ([ReadConfig], through a getenv
// main passes in: the package reads nothing of the process), the routes of
// OUTFLOW_ROUTES, the Temporal client, /metrics, the retention cleanup's
// schedule, the deprecated OUTFLOW_RELAY_SOURCE, the replay horizon's
// guard, and the relay itself ([Run]).
//
// The library's binary is cmd/starter:
//
//	go install github.com/outflow/outflow/outbox/cmd/starter@v0.1.0
//
// It needs OUTFLOW_ROUTES (or OUTFLOW_ROUTES_FILE) and publishes to
// Temporal alone. A service's own starter passes [Defaults] (its routes)
// and [Hooks] (its Temporal client with a payload codec, more sinks such
// as NATS JetStream): outflow's starter at the repository's root adds the
// order app's routes, its codec and the JetStream sink this way.
package relaycmd
