package outboxops_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestEventRow: every column of the event, in the table's order, whatever
// columns a later schema adds; an unknown id is ErrEventNotFound.
func TestEventRow(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	e := testdb.Enqueue(t, pool, testdb.Event(t, "r", "One"))[0]
	raw, err := outboxops.EventRow(ctx, pool, e.ID)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(raw), `{"event_id":"`+e.ID.String()+`"`), "the table's first column first: %s", raw)
	var cols map[string]any
	require.NoError(t, json.Unmarshal(raw, &cols))
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_name = 'outbox_events' AND table_schema = current_schema()`).Scan(&n))
	require.Len(t, cols, n, "every column")
	require.Equal(t, "r", cols["aggregate_id"])
	require.Nil(t, cols["published_at"])

	_, err = outboxops.EventRow(ctx, pool, uuid.New())
	require.ErrorIs(t, err, outbox.ErrEventNotFound)
}
