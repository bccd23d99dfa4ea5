package testsuite

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/namedsql"
)

// TestLogSourceEndToEnd: with OUTFLOW_RELAY_SOURCE=log for every process,
// orders placed and cancelled through the order API are written to the
// append-only log only, the starter reads them from there, and the sagas
// run: a card order is confirmed, a declined one fails, a cancelled one is
// cancelled, and the four invariants hold.
func TestLogSourceEndToEnd(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := NewLogStack(t)
	s.Start("orderapi", "")
	starter := s.Start("starter", "")
	s.Start("worker", "")
	api := s.API()

	ok, err := api.Create(ctx, "log-ok-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	declined, err := api.Create(ctx, "log-declined-"+uuid.NewString(), "pm_card_chargeDeclined")
	require.NoError(t, err)
	late, err := api.Create(ctx, "log-late-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, WaitStatus(ctx, s, late.OrderID, "confirmed", 2*time.Minute))
	require.NoError(t, api.Cancel(ctx, late.OrderID))

	assertRecovered(ctx, t, s)
	require.NoError(t, WaitStatus(ctx, s, ok.OrderID, "confirmed", time.Second))
	require.NoError(t, WaitStatus(ctx, s, declined.OrderID, "payment_failed", time.Second))
	require.NoError(t, WaitStatus(ctx, s, late.OrderID, "cancelled", time.Second))

	c, err := qSourceCounts.One(ctx, s.Pool, namedsql.NoArgs{})
	require.NoError(t, err)
	require.Zero(t, c.OutboxEvents, "the order API wrote nothing to outbox_events")
	require.GreaterOrEqual(t, c.OutboxLog, int64(4), "three OrderCreated and one OrderCancelled in the log")
	require.NoError(t, starter.WaitLog(ctx, "log source: reading the log"))
}
