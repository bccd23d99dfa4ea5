package orderhttp

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/outboxtest"
)

// TestRepeatedCancelAfterCleanup: retention cleanup deleted the first
// cancel's event; a repeated POST /orders/{id}/cancel is still 202 with the
// first cancel's body (it was 409 before the sequence was kept on the order).
func TestRepeatedCancelAfterCleanup(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	resp := b.post(t, validBody)
	require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Body)
	var created orders.CreateOrderResult
	require.NoError(t, json.Unmarshal(resp.Body, &created))
	path := "/orders/" + created.OrderID.String() + "/cancel"

	first := b.do(t, http.MethodPost, path, "")
	require.Equal(t, http.StatusAccepted, first.Status, "%s", first.Body)
	var cancelled orders.CancelOrderResult
	require.NoError(t, json.Unmarshal(first.Body, &cancelled))
	require.EqualValues(t, 1, outboxtest.DeleteEvents(t, b.pool, outboxtest.Match{ID: cancelled.EventID}))

	again := b.do(t, http.MethodPost, path, "")
	require.Equal(t, http.StatusAccepted, again.Status, "%s", again.Body)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.JSONEq(t, string(first.Body), string(again.Body))
}
