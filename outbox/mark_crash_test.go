package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest/dev/pgcluster"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestMarkLostToAPostgresCrash crashes PostgreSQL (immediate stop) right
// after the relay's mark, which commits without waiting for the disk
// (RelayMarkAsync). A mark lost that way is the ACK gap: the event is
// unpublished again and the next relay publishes it again (Temporal absorbs
// the second start by its workflow ID). A commit that waits for the disk
// after the mark, such as the claim of the next event, keeps the mark.
func TestMarkLostToAPostgresCrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The WAL writer writes asynchronous commits every wal_writer_delay; at
	// its longest (10 s) a mark stays in the server's buffers long enough
	// for the crash to come first. No autovacuum writes WAL meanwhile.
	c, err := pgcluster.StartTemp(ctx, pgcluster.Options{WALLevel: "replica",
		Settings: []string{"wal_writer_delay=10000ms", "autovacuum=off"}})
	require.NoError(t, err)
	t.Cleanup(c.Discard)
	url := testdb.NewURLOn(t, c.URL)
	open := func() *pgxpool.Pool {
		pool, err := pgxpool.New(ctx, url)
		require.NoError(t, err)
		return pool
	}
	pool := open()
	defer func() { pool.Close() }()
	b := &testBundle{pool: pool, url: url, rec: newRecorder(nil)}
	// A short lease: the claim reached the disk before the lost mark, so the
	// event waits for that lease to run out, as after any relay's crash.
	relay := func() *outbox.PollRelay {
		return b.newRelay(t, outbox.RelayConfig{Owner: "relay-" + uuid.NewString()[:8], BatchSize: 1, Lease: 2 * time.Second})
	}
	crash := func() {
		pool.Close()
		require.NoError(t, c.Crash(ctx))
		pool = open()
		b.pool = pool
	}
	claimAndMark := func(r *outbox.PollRelay, want uuid.UUID) {
		got, _, err := r.ClaimForTest(ctx)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, want, got[0].ID)
		markOne(t, r, want)
		require.True(t, published(pool, want), "marked before the crash")
	}

	// A mark with nothing after it: lost. The WAL writer's cycle may still
	// come between mark and crash; a few tries make that vanishingly rare.
	var lost uuid.UUID
	for try := 0; try < 3 && lost == uuid.Nil; try++ {
		e := testdb.Enqueue(t, pool, testdb.Event(t, uuid.NewString(), "OrderCreated"))[0]
		claimAndMark(relay(), e.ID)
		crash()
		if !published(pool, e.ID) {
			lost = e.ID
		}
	}
	require.NotEqual(t, uuid.Nil, lost, "three marks all survived an immediate stop: the mark waits for the disk")

	// The lost mark is the ACK gap: once the lease ends, a relay publishes
	// the event again.
	stop := run(t, relay())
	eventually(t, 10*time.Second, func() bool { return published(pool, lost) }, "the event whose mark was lost is published again")
	stop()
	require.GreaterOrEqual(t, b.rec.ackedIDs()[lost], 1)

	// A mark followed by a commit that waits for the disk survives.
	order := uuid.NewString()
	evs := testdb.Enqueue(t, pool, testdb.Event(t, order, "OrderCreated"), testdb.Event(t, order, "OrderCancelled"))
	r := relay()
	claimAndMark(r, evs[0].ID)
	claimAndMark(r, evs[1].ID) // its claim waits for the disk, which holds the first mark then
	crash()
	require.True(t, published(pool, evs[0].ID), "the first mark is older than the second event's claim, which reached the disk")
}
