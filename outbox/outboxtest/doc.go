// Package outboxtest is for the tests of a service that uses package outbox:
// it asserts what the service's transactions enqueued, runs a real relay
// against a recording publisher, and forces the states a relay or an
// operator leaves events in. It reads and writes the outbox's own table so
// that a test does not have to: the columns are the outbox's to change.
//
// Every helper takes the test's testing.TB and fails it at once with a
// message listing what it found, in the manner of testify's require, and
// takes the database as a [DB] (a *pgxpool.Pool, or a pgx.Tx to look inside
// a transaction before it commits). The helpers bring no database of their
// own: the test migrates one (outbox.Migrate) and passes it, or takes a
// schema of its own in it ([NewSchema]).
//
// # Asserting what was enqueued
//
// [RequireEnqueued] fails unless exactly one event matches a [Match]
// (aggregate, type, ID; a zero field matches anything) and returns it, with
// its payload and the relay's bookkeeping, as an [Event];
// [RequireNotEnqueued] fails if any does, the check of a rolled-back or
// rejected change. [Events] lists the matching events, one aggregate's in
// sequence order. [WaitFor] waits until the matching events satisfy a
// condition ([AllPublished], [AllQuarantined], or the test's own).
//
// # Running a relay
//
// [RunRelay] runs a real outbox.Relay over the test's database, publishing
// to a [Recorder]: a publisher that records what it acknowledged, lets the
// test decide each answer ([Recorder.Answer]), and waits for the n-th event
// without polling ([Recorder.Wait]). The relay stops when the test ends.
//
// # An outbox per test
//
// [NewSchema] gives a test an outbox of its own in a fresh schema of the
// database, so that no other relay (the service's own, another test's)
// takes its events; [Holders] (and a timed-out [Recorder.Wait]) says who
// holds the events that were not delivered.
//
// # Forcing a state
//
// [Force] writes onto events what the relay or an operator would have
// written (published, quarantined, leased, backing off, skipped, replayed,
// aged; see [Change]), for a test of code that reads such a state.
// [DeleteEvents] leaves what retention cleanup leaves. Neither proves the
// relay would get there: that is a test with [RunRelay].
//
// The package depends on outbox, the PostgreSQL driver and testify only,
// never on an application built on them (TestNoApplicationDependencies).
package outboxtest
