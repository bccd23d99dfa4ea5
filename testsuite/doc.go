// Package testsuite proves outflow's guarantees where they matter: in the
// crash windows. Its harness runs the real binaries (orderapi, starter,
// worker, providersim, and where a test needs them inventory and orderfeed)
// as processes on real PostgreSQL and a real Temporal dev server persisting
// to a file, can SIGKILL and restart each of them, and checks the four
// invariants of docs/reference.md plus the provider's ledger:
//
//  1. every committed order change has exactly one durable outbox event;
//  2. a rolled-back change has none;
//  3. every durable event is published at least once after recovery (a
//     workflow with ID = event_id exists);
//  4. duplicate deliveries change consumer-visible state once: one charge,
//     at most one refund, one email of each kind, one projection update per
//     event.
//
// [CheckInvariants] checks them on the order database (the Stripe
// webhooks' events among them: one per recorded Stripe event, each
// published), [CheckInventory] on the inventory service's own database
// (each event named by its one stored answer, the stock holding each
// reservation once).
//
// The tests are the failpoint matrix (one subtest per failpoint, each
// crashing a process once; inventory.after_commit, webhook.after_commit and
// the inventory relay's relay.after_publish, a signal route's ACK gap, with
// stacks of their own), the chaos soak and the backlog test. In the
// soak an [Operator] replays, retries, skips and forgets customers with the
// real outboxctl while the kills run, and [CheckOracle] judges the result.
package testsuite
