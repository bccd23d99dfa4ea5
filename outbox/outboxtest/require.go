package outboxtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// queryTimeout bounds each statement of a helper, so a test whose database
// hangs fails with a message instead of at the test binary's timeout. The
// helpers' statements do not run on the test's own context (t.Context()),
// which ends before its cleanups: a cleanup may assert what is left.
const queryTimeout = 30 * time.Second

// Events returns the events m selects, each aggregate's in sequence order
// (aggregates ordered by type, then ID), and fails t on a database error.
// Match{AggregateType: typ, AggregateID: id} lists one aggregate's events;
// none is an empty slice.
func Events(t testing.TB, db DB, m Match) []Event {
	t.Helper()
	events, err := find(context.Background(), db, m)
	require.NoError(t, err, "outboxtest: read the events of %s", m)
	return events
}

func find(ctx context.Context, db DB, m Match) ([]Event, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	events, err := qEvents.All(ctx, db, m.args())
	if events == nil && err == nil {
		events = []Event{}
	}
	return events, err
}

// RequireEnqueued fails t unless exactly one event matches m, and returns
// it for further assertions. db may be the transaction that enqueued it,
// before it commits.
func RequireEnqueued(t testing.TB, db DB, m Match) Event {
	t.Helper()
	events := Events(t, db, m)
	if len(events) != 1 {
		require.FailNow(t, fmt.Sprintf("outboxtest: expected exactly one event enqueued matching %s, found %d", m, len(events)),
			"%s", describe(events))
	}
	return events[0]
}

// RequireNotEnqueued fails t if any event matches m: a rejected or
// rolled-back change wrote none. RequireNotEnqueued(t, db, Match{}) holds
// only on an empty outbox.
func RequireNotEnqueued(t testing.TB, db DB, m Match) {
	t.Helper()
	if events := Events(t, db, m); len(events) > 0 {
		require.FailNow(t, fmt.Sprintf("outboxtest: expected no event enqueued matching %s, found %d", m, len(events)),
			"%s", describe(events))
	}
}

// WaitFor reads the events m selects until cond holds for them and returns
// them; it fails t with msgAndArgs (testify's convention) when cond does not
// hold within the given time. It polls every 20ms: the relay's writes (a
// mark, a quarantine) are not announced. A database error counts as "not
// yet" and is reported if the wait fails.
func WaitFor(t testing.TB, db DB, m Match, within time.Duration, cond func([]Event) bool, msgAndArgs ...any) []Event {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		events, err := find(context.Background(), db, m)
		if err == nil && cond(events) {
			return events
		}
		if time.Now().After(deadline) {
			detail := describe(events)
			if err != nil {
				detail = "last read failed: " + err.Error()
			}
			require.FailNow(t, fmt.Sprintf("outboxtest: the events matching %s did not reach the condition within %s\n%s", m, within, detail),
				msgAndArgs...)
		}
		<-tick.C
	}
}

// AllPublished is a condition for [WaitFor]: at least one event, and every
// one published.
func AllPublished(events []Event) bool {
	for _, e := range events {
		if e.PublishedAt == nil {
			return false
		}
	}
	return len(events) > 0
}

// AllQuarantined is a condition for [WaitFor]: at least one event, and
// every one quarantined.
func AllQuarantined(events []Event) bool {
	for _, e := range events {
		if e.QuarantinedAt == nil {
			return false
		}
	}
	return len(events) > 0
}

// describe lists events for a failure message.
func describe(events []Event) string {
	if len(events) == 0 {
		return "no events"
	}
	lines := make([]string, len(events))
	for i, e := range events {
		lines[i] = "  " + e.String()
	}
	return "events:\n" + strings.Join(lines, "\n")
}
