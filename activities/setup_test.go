package activities

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/internal/dev/testclock"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/inbox"
	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/providersim"
)

type testBundle struct {
	sim   *providersim.Simulator
	clock *testclock.Clock // the simulator's and the activities' shared time
}

// setup starts a provider simulator and returns Activities talking to it
// through the real stripe-go client and the real email client. The HTTP
// timeout is short so timeout_after_commit faults resolve quickly.
func setup(t *testing.T) (*Activities, *testBundle) {
	t.Helper()
	clk := testclock.New(time.Now().UTC().Truncate(time.Second))
	sim := providersim.New(providersim.Options{Now: clk.Now})
	base, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })

	acts, err := New(Config{StripeAPIBase: base, EmailAPIBase: base, HTTPTimeout: 750 * time.Millisecond})
	require.NoError(t, err)
	acts.Now = clk.Now
	acts.Metrics = mustMetrics(t)
	noFaults, err := failpoints.Parse("")
	require.NoError(t, err)
	acts.Failpoints = noFaults
	return acts, &testBundle{sim: sim, clock: clk}
}

func (b *testBundle) fault(t *testing.T, op, fault string) {
	t.Helper()
	require.NoError(t, b.sim.InjectFault(providersim.Fault{Operation: op, Fault: fault, Count: 1}))
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// requireAppError asserts err is an ApplicationError of type typ with the
// given retryability.
func requireAppError(t *testing.T, err error, typ string, nonRetryable bool) {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "want ApplicationError %s, got %T %v", typ, err, err)
	require.Equal(t, typ, appErr.Type(), "error: %v", err)
	require.Equal(t, nonRetryable, appErr.NonRetryable(), "error: %v", err)
}

// withDB gives acts a migrated database of its own, for the activities that
// keep an inbox (SendEmail, ProjectOrder).
func withDB(t *testing.T, acts *Activities) *pgxpool.Pool {
	t.Helper()
	pool, _ := testdb.New(t)
	acts.DB = pool
	return pool
}

// withInbox gives acts an inbox whose metric is registered on a registry of
// its own, and returns the registry for [inboxDuplicates].
func withInbox(t *testing.T, acts *Activities) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	ib, err := inbox.New(reg)
	require.NoError(t, err)
	acts.Inbox = ib
	return reg
}

// inboxDuplicates reads inbox_duplicates_total{consumer} from reg, as a
// scrape of the worker's /metrics would.
func inboxDuplicates(t *testing.T, reg prometheus.Gatherer, consumer string) float64 {
	t.Helper()
	return promtest.Total(t, reg, "inbox_duplicates_total", "consumer", consumer)
}

// inboxHolds reports whether the inbox holds consumer's row for the event,
// asked through an inbox of its own so acts' duplicates stay uncounted.
func inboxHolds(t *testing.T, pool *pgxpool.Pool, consumer, eventID string) bool {
	t.Helper()
	ib, err := inbox.New(nil)
	require.NoError(t, err)
	seen, err := ib.Seen(ctxT(t), pool, consumer, uuid.MustParse(eventID))
	require.NoError(t, err)
	return seen
}

// mustMetrics is the activities' metrics on a registry of the test's own.
func mustMetrics(t *testing.T) *Metrics {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	return m
}
