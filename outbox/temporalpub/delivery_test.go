package temporalpub_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// TestDeliveryKindsAndTheRetentionHorizon: the publisher tells the workflow
// what it knows about earlier runs (a first delivery, a replay, or unknown),
// and refuses a replay of an event older than the namespace retention:
// Temporal may have forgotten the event's first run, so a start could run it
// a second time (issue "exactly-once at the edges of time", defect 5). The
// clock is moved, not the events: "now" is two retentions after they
// committed.
func TestDeliveryKindsAndTheRetentionHorizon(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tq := taskQueue(t)
	retention, err := temporalpub.NamespaceRetention(ctx, temporal.Client(), "default")
	require.NoError(t, err)
	require.Positive(t, retention)

	young := newPublisher(t, temporal.Client(), temporalpub.Config{TaskQueue: tq})
	reg := prometheus.NewRegistry()
	late := newPublisher(t, temporal.Client(), temporalpub.Config{TaskQueue: tq, Registerer: reg,
		Now: func() time.Time { return time.Now().Add(2 * retention) }})
	got, err := late.Retention(ctx)
	require.NoError(t, err)
	require.Equal(t, retention, got)

	event := func(replay bool) outbox.Event {
		e := orderCreated(t, uuid.NewString())
		e.ID, e.OccurredAt, e.Replay = uuid.New(), time.Now(), replay
		return e
	}

	first := event(false)
	require.NoError(t, young.Publish(ctx, first))
	require.Equal(t, temporalpub.DeliveryFirst, memoValue[string](t, describe(t, first.ID), "delivery"))

	replay := event(true)
	require.NoError(t, young.Publish(ctx, replay))
	require.Equal(t, temporalpub.DeliveryReplay, memoValue[string](t, describe(t, replay.ID), "delivery"))
	summary, _ := userMetadata(t, temporal.Client(), replay.ID)
	require.Equal(t, "Payment of order "+replay.AggregateID+": ", summary[:len("Payment of order "+replay.AggregateID+": ")])
	require.True(t, strings.HasSuffix(summary, " (replay)"), "a replay says so in its summary: %q", summary)

	// A re-delivery older than the retention: an earlier run may have been
	// forgotten, so the workflow must not trust it is the first.
	old := event(false)
	require.NoError(t, late.Publish(ctx, old))
	require.Equal(t, "", memoValue[string](t, describe(t, old.ID), "delivery"))

	// A replay older than the retention is acknowledged without a start.
	refused := event(true)
	require.NoError(t, late.Publish(ctx, refused), "acknowledged: the event stays as published as it was")
	_, err = temporal.Client().DescribeWorkflow(ctx, refused.ID.String(), "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "no workflow was started for the refused replay")
	require.Equal(t, 1.0, promtest.Value(t, reg, "outbox_replays_refused_total"))

	// OUTFLOW_REPLAY_HORIZON shorter than the retention refuses earlier.
	short := newPublisher(t, temporal.Client(), temporalpub.Config{TaskQueue: tq, ReplayHorizon: time.Minute,
		Now: func() time.Time { return time.Now().Add(time.Hour) }})
	tooOld := event(true)
	require.NoError(t, short.Publish(ctx, tooOld))
	_, err = temporal.Client().DescribeWorkflow(ctx, tooOld.ID.String(), "")
	require.ErrorAs(t, err, &notFound)
}
