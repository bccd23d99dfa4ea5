package ctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
)

// cleanupSeed is a database with old published events (and their inbox
// rows) that cleanup must delete, and events and inbox rows it must keep.
type cleanupSeed struct {
	old  []uuid.UUID // published 10 days ago
	keep []uuid.UUID // skipped 10 days ago, unpublished, quarantined, backing off, replaying, recent
}

func (b *testBundle) seedCleanup(t *testing.T, oldPublished int) cleanupSeed {
	t.Helper()
	var s cleanupSeed
	var published []uuid.UUID
	for i := range oldPublished {
		published = append(published, b.Enqueue(t, fmt.Sprintf("o-old-%d", i), "OrderCreated")[0].ID)
	}
	for _, id := range published {
		b.Force(t, id, outboxtest.SetOccurred(11*day), outboxtest.SetPublished(10*day))
	}
	b.Exec(t, `INSERT INTO processed_events (consumer_name, event_id, processed_at)
	           SELECT 'projection', id, now() - interval '10 days' FROM unnest($1::uuid[]) AS id`, published)
	skipped := b.Enqueue(t, "o-skipped", "OrderCreated")[0].ID
	b.Force(t, skipped, outboxtest.SetQuarantined(10*day, ""), outboxtest.SetSkipped(10*day, "ops", "test"))
	s.old = published
	s.keep = append(s.keep, skipped) // the record of an operator's decision

	for _, state := range [][]outboxtest.Change{
		{outboxtest.SetOccurred(30 * day)},
		{outboxtest.SetOccurred(30 * day), outboxtest.SetQuarantined(29*day, "")},
		{outboxtest.SetOccurred(30 * day), outboxtest.SetFailed(3, "", time.Hour)},
		{outboxtest.SetOccurred(30 * day), outboxtest.SetReplayRequested()},
		{outboxtest.SetPublished(day)},
	} {
		id := b.Enqueue(t, "o-keep-"+uuid.NewString()[:8], "OrderCreated")[0].ID
		b.Force(t, id, state...)
		s.keep = append(s.keep, id)
	}
	// An old inbox row of a retained event, and a recent one: both stay.
	b.Exec(t, `INSERT INTO processed_events (consumer_name, event_id, processed_at) VALUES ('projection', $1, now() - interval '30 days')`, s.keep[0])
	b.Exec(t, `INSERT INTO processed_events (consumer_name, event_id, processed_at) VALUES ('projection', $1, now())`, uuid.New())
	return s
}

// day is a day, for the ages of the seeded rows.
const day = 24 * time.Hour

// counts returns how many of ids are still in the outbox, and the inbox size.
func (b *testBundle) counts(t *testing.T, ids []uuid.UUID) (events, inbox int) {
	t.Helper()
	for _, e := range outboxtest.Events(t, b.Pool, outboxtest.Match{}) {
		if slices.Contains(ids, e.ID) {
			events++
		}
	}
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM processed_events`).Scan(&inbox))
	return events, inbox
}

// TestCleanup: only old published events and old inbox rows of
// deleted events go, in bounded batches with progress per batch; a second run
// deletes nothing; afterwards a replay reaching behind the horizon is refused.
func TestCleanup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.seedCleanup(t, 7)

	r := b.OK(t, "cleanup", "--retention", "168h", "--batch-size", "3", "--yes")
	require.Contains(t, r.Stdout, "plan: delete, in batches of 3, the events published more than 168h0m0s ago")
	require.Equal(t, []string{
		"outbox_events: batch 1 deleted 3 rows (3 so far)",
		"outbox_events: batch 2 deleted 3 rows (6 so far)",
		"outbox_events: batch 3 deleted 1 rows (7 so far)",
		"processed_events: batch 1 deleted 3 rows (3 so far)",
		"processed_events: batch 2 deleted 3 rows (6 so far)",
		"processed_events: batch 3 deleted 1 rows (7 so far)",
	}, strings.Split(strings.TrimSpace(r.Stdout), "\n")[1:7])
	require.Contains(t, r.Stdout, "deleted 7 events")
	require.Contains(t, r.Stdout, "log: made 0 ranges ahead, dropped 0", "the log's ranges are there since the migration")
	require.Contains(t, r.Stderr, "outboxctl: cleanup")

	old, inbox := b.counts(t, s.old)
	require.Zero(t, old)
	kept, _ := b.counts(t, s.keep)
	require.Equal(t, len(s.keep), kept, "never an unpublished, quarantined, skipped, backing-off, replayed or recent event")
	require.Equal(t, 2, inbox, "the inbox rows of a retained event and recent ones stay")

	r = b.OK(t, "cleanup", "--retention", "168h", "--yes")
	require.Contains(t, r.Stdout, "deleted 0 events")

	r = b.Ctl(t, "replay", "--from", time.Now().Add(-30*24*time.Hour).UTC().Format(time.RFC3339),
		"--to", time.Now().UTC().Format(time.RFC3339), "--yes")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "before the cleanup horizon")
}

// TestCleanupCrashMidBatch runs the real binary with
// OUTFLOW_FAILPOINTS=cleanup.mid_batch=crash on more rows than one batch: it
// dies of SIGKILL after its first batch, that batch's rows are gone, nothing
// unpublished or quarantined was touched, and a clean run finishes the job.
func TestCleanupCrashMidBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	exe := proc.Build(t, "outboxctl", "../cmd/outboxctl")
	s := b.seedCleanup(t, 25)

	cleanup := func(failpoints string) (*exec.Cmd, []byte, error) {
		ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, exe, "cleanup", "--retention", "168h", "--batch-size", "10", "--yes")
		cmd.Env = append(os.Environ(), "DATABASE_URL="+b.URL, "OUTFLOW_FAILPOINTS="+failpoints)
		out, err := cmd.CombinedOutput()
		return cmd, out, err
	}
	cmd, out, err := cleanup("cleanup.mid_batch=crash")
	var exitErr *exec.ExitError
	require.True(t, errors.As(err, &exitErr), "want a crash, got %v\n%s", err, out)
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled(), "%s", out)
	require.Equal(t, syscall.SIGKILL, ws.Signal())
	require.Contains(t, string(out), "outbox_events: batch 1 deleted 10 rows")
	require.NotContains(t, string(out), "batch 2")

	left, _ := b.counts(t, s.old)
	require.Equal(t, len(s.old)-10, left, "exactly the first batch is gone")
	kept, _ := b.counts(t, s.keep)
	require.Equal(t, len(s.keep), kept)

	_, out, err = cleanup("")
	require.NoError(t, err, "%s", out)
	left, inbox := b.counts(t, s.old)
	require.Zero(t, left, "the re-run finished the job")
	require.Equal(t, 2, inbox)
	kept, _ = b.counts(t, s.keep)
	require.Equal(t, len(s.keep), kept)
}
