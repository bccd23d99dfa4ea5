// Package outboxops is the operator's side of package outbox: what a person
// on call (or a tool such as cmd/outboxctl) does to an outbox, never what a
// service needs to enqueue events or a relay to publish them.
//
// [Status] and [ListAll] show the backlog ([List] outbox_events' alone),
// [Show] one event whole; [Retry] and [Skip] repair a
// quarantined event (which holds back its aggregate's later events until
// then), and [RetryQuarantined] retries every quarantined event a filter
// selects after an outage, in audited batches ([PlanRetryQuarantined] counts
// them first); [Replay] delivers published events again, with semantics
// against Temporal documented on it ([PlanReplay] counts them first, and
// [RecordReplayHorizon] bounds how far back it may reach); [Cleanup]
// deletes old published events and inbox rows in bounded batches, and
// [CleanupExclusive] is the pass a relay process runs on a schedule, one
// process at a time; [RetainLog] is the log's retention; [Schedule] runs
// both every interval beside a relay. [Source] and [SetSource] read and
// change the database's relay source.
//
// Every function works on the outbox's own tables, created by
// outbox.Migrate, whichever relay source (poll, cdc or log) publishes the
// events: an event ID that outbox_events does not have is looked for in
// the log (outbox_log), and acted on with the log's rules, which each
// function documents. The package reads no environment: a binary parses
// its variables and passes the values. Every function but [CleanupExclusive] (which holds a
// session lock on a connection of its pool) takes a [DB]: a pool, a
// connection, or the caller's pgx.Tx, which the function then joins (its
// transaction is a savepoint of the caller's). [SkipTx] is the one that takes a pgx.Tx by
// type: a skip that means something to the event's consumers (an order's
// projection must account for the skipped sequence) commits with that in
// one transaction, or not at all.
//
// The functions wake the relays (a NOTIFY on outbox.NotifyChannel) when
// their transaction commits, so a retried or replayed event is published
// at once. docs/operations.md is the operator's guide.
package outboxops
