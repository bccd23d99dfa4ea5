package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/internal/relaysql"
	"github.com/outflow/outflow/outbox/namedsql"
)

// Statement-level hooks for the lease-fencing tests.

func (r *pollRelay) ClaimForTest(ctx context.Context) (events []Event, tookOver []bool, err error) {
	batch, _, err := r.claim(ctx, false)
	for _, c := range batch {
		events = append(events, c.Event)
		tookOver = append(tookOver, c.tookOver)
	}
	return events, tookOver, err
}

func (r *pollRelay) MarkForTest(ctx context.Context, ids ...uuid.UUID) (int, error) {
	marked, err := r.mark(ctx, ids)
	return len(marked), err
}

func (r *pollRelay) ReleaseForTest(ctx context.Context, ids ...uuid.UUID) (int64, error) {
	return r.release(ctx, ids)
}

func (r *pollRelay) FailForTest(ctx context.Context, id uuid.UUID, msg string) (int, error) {
	got, err := r.recordFailures(ctx, []failure{{c: claimed{Event: Event{ID: id}, attempt: 1}, err: errors.New(msg)}})
	return len(got), err
}

func (c RelayConfig) ValidateForTest() error {
	if err := c.setDefaults(); err != nil {
		return err
	}
	return c.validate()
}

// ClaimInTxForTest runs the relay's claim (both statements) inside the
// caller's transaction, which the test commits or rolls back, so it can hold
// a claim uncommitted.
func (r *pollRelay) ClaimInTxForTest(ctx context.Context, tx pgx.Tx) ([]Event, error) {
	batch, err := r.claimOn(ctx, tx, false, false, r.cfg.BatchSize, nil)
	var events []Event
	for _, c := range batch {
		events = append(events, c.Event)
	}
	return events, err
}

// VerifyClaimInTxForTest runs only the claim's verification statement
// (RelayClaimVerify) on ids inside the caller's transaction and returns the
// IDs it gave back.
func (r *pollRelay) VerifyClaimInTxForTest(ctx context.Context, tx pgx.Tx, ids ...uuid.UUID) ([]uuid.UUID, error) {
	return qRelayClaimVerify.All(ctx, tx, relaysql.EventsArgs{Owner: r.cfg.Owner, EventIDs: ids})
}

// ClaimStatementForTest returns the claim statement (RelayClaim) as the
// package loaded it and its arguments as the relay binds them, for EXPLAIN.
func (r *pollRelay) ClaimStatementForTest() (string, []any) {
	return qRelayClaim.SQL(), qRelayClaim.Args(claimArgs(r.cfg.Owner, &r.cfg))
}

// VerifyStatementForTest is ClaimStatementForTest for RelayClaimVerify.
func (r *pollRelay) VerifyStatementForTest(ids ...uuid.UUID) (string, []any) {
	return qRelayClaimVerify.SQL(), qRelayClaimVerify.Args(relaysql.EventsArgs{Owner: r.cfg.Owner, EventIDs: ids})
}

// StatementsForTest describes every bound statement.
func StatementsForTest() []namedsql.Info { return statements }

// QueriesForTest are every statement sql.go loads.
func QueriesForTest() namedsql.Queries { return queries }

// WithDefaultsForTest returns c with NewRelay's defaults applied.
func (c RelayConfig) WithDefaultsForTest() (RelayConfig, error) {
	err := c.setDefaults()
	return c, err
}

// ClaimExceptForTest claims like Run's pipeline, leaving out held.
func (r *pollRelay) ClaimExceptForTest(ctx context.Context, held ...uuid.UUID) ([]Event, error) {
	batch, _, err := r.claimN(ctx, false, r.cfg.BatchSize, held)
	events := make([]Event, len(batch))
	for i, c := range batch {
		events[i] = c.Event
	}
	return events, err
}

// The log source's steps, one at a time, for the crash and epoch tests: a
// test that stops calling them is a relay that died there.

// LogBatchForTest is one read of a partition and what became of it.
type LogBatchForTest struct {
	p      *logPartition
	v      logView
	done   []bool
	failed []logFailure
}

// Events are the batch's events, in key order.
func (b *LogBatchForTest) Events() []Event {
	var out []Event
	for _, r := range b.v.rows {
		out = append(out, r.event())
	}
	return out
}

// Epoch and Tries are the cursor's as the read saw them.
func (b *LogBatchForTest) Epoch() int64 { return b.v.cursor.Epoch }
func (b *LogBatchForTest) Tries() int   { return b.v.cursor.Tries }

// TakeForTest is R1: the partitions this relay took.
func (r *logRelay) TakeForTest(ctx context.Context) ([]int, error) {
	ps, err := r.take(ctx, r.cfg.MaxPartitions)
	var ids []int
	for _, p := range ps {
		ids = append(ids, p.id)
	}
	return ids, err
}

// ReadForTest is R2 on a partition this relay took.
func (r *logRelay) ReadForTest(ctx context.Context, partition int) (*LogBatchForTest, error) {
	r.mu.Lock()
	p := r.parts[partition]
	r.mu.Unlock()
	if p == nil {
		return nil, errors.New("ReadForTest: partition not taken")
	}
	v, retry, err := r.read(ctx, p)
	if retry {
		err = errors.New("ReadForTest: the epoch moved under the read")
	}
	return &LogBatchForTest{p: p, v: v}, err
}

// PublishForTest is R3 (or the isolation) on a batch read.
func (r *logRelay) PublishForTest(ctx context.Context, b *LogBatchForTest) {
	if b.v.isolating() {
		b.done, b.failed = r.isolate(b.v)
		return
	}
	b.done, b.failed = r.publishBatch(ctx, ctx, b.v)
}

// AdvanceForTest is R4 on a batch published; refused reports a moved epoch.
func (r *logRelay) AdvanceForTest(ctx context.Context, b *LogBatchForTest) (refused bool, err error) {
	return r.advance(ctx, b.p, b.v, b.done, b.failed)
}

// ErrLogLeaseLostForTest is the error of a read or advance of a partition
// this relay lost.
var ErrLogLeaseLostForTest = errLogLeaseLost

// HoldStepForTest is one step of a partition's hold worker (H1, then H2
// and H3 when it publishes); worked is false when there was nothing to do
// or the step waits for the reader's batch in flight.
func (r *logRelay) HoldStepForTest(ctx context.Context, partition int) (worked bool, err error) {
	r.mu.Lock()
	p := r.parts[partition]
	r.mu.Unlock()
	if p == nil {
		return false, errors.New("HoldStepForTest: partition not taken")
	}
	return r.holdStep(ctx, p)
}

// LogSharesForTest is logShares for relays with the MaxPartitions caps, in
// owner order.
func LogSharesForTest(caps []int) []int {
	relays := make([]logRelayRow, len(caps))
	for i, c := range caps {
		relays[i] = logRelayRow{Owner: fmt.Sprintf("relay-%02d", i), MaxPartitions: c}
	}
	shares := logShares(relays)
	out := make([]int, len(caps))
	for i, rl := range relays {
		out[i] = shares[rl.Owner]
	}
	return out
}

// MigrationFilesForTest are the outbox's migrations, for the test that
// migrates a database an earlier version left behind.
var MigrationFilesForTest = mustSub(migrationFiles, "migrations")

// CDCStreamOwnerForTest is the claimant name the CDC stream writes.
func CDCStreamOwnerForTest(owner string) string { return cdcStreamOwner(owner) }

// ListenerApplicationNameForTest is the listener connection's application_name.
func ListenerApplicationNameForTest(owner string) string { return listenerApplicationName(owner) }

// One source's relay and settings, for the tests of that source's rules
// (the public [Relay] takes the source as RelayConfig.Source).
type (
	PollRelay = pollRelay
	CDCRelay  = cdcRelay
	CDCConfig = cdcConfig
	LogRelay  = logRelay
	LogConfig = logConfig
)

var (
	NewPollRelay = newPollRelay
	NewCDCRelay  = newCDCRelay
	NewLogRelay  = newLogRelay
)

var (
	CDCApplicationName = cdcApplicationName
	ErrLogNoRange      = errLogNoRange
	ErrWALLevel        = relaysql.ErrWALLevel
)

const LogPartitions = logPartitions
