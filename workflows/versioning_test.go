package workflows

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/orders"
)

var testAddress = orders.ShippingAddress{Name: "Ada Lovelace", Line1: "12 St James's Square", City: "London",
	PostalCode: "SW1Y 4JH", Country: "GB"}

// v2Payload is the OrderCreated v2 payload of a v1 payload, as the order
// service writes it for an order with testAddress.
func v2Payload(t *testing.T, v1 json.RawMessage) json.RawMessage {
	t.Helper()
	o, err := orders.DecodeOrderCreated(orders.OrderCreatedV1, v1)
	require.NoError(t, err)
	addr := testAddress
	o.ShippingAddress = &addr
	version, payload := orders.EncodeOrderCreated(o)
	require.Equal(t, orders.OrderCreatedV2, version)
	data, err := json.Marshal(payload)
	require.NoError(t, err)
	return data
}

// createdInputV2 is createdInput with a v2 payload.
func createdInputV2(t *testing.T, paymentMethod string) handoff.EventInput {
	in := createdInput(t, paymentMethod)
	in.SchemaVersion, in.Payload = orders.OrderCreatedV2, v2Payload(t, in.Payload)
	return in
}

// v1 and v2 events side by side: the same workflow completes both the same
// way; only the v2 confirmation carries the address and sets the memo.
func TestSagaV1AndV2SideBySide(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   handoff.EventInput
		want *activities.ShippingAddress
	}{
		{"v1", createdInput(t, "pm_card_visa"), nil},
		{"v2", createdInputV2(t, "pm_card_visa"), &activities.ShippingAddress{Name: "Ada Lovelace",
			Line1: "12 St James's Square", City: "London", PostalCode: "SW1Y 4JH", Country: "GB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, fakes{charge: chargeOK})
			if tc.want != nil {
				h.env.OnUpsertMemo(map[string]any{MemoShipsTo: "GB"}).Return(nil).Once()
			}
			h.env.ExecuteWorkflow(OrderCreatedWorkflow, tc.in)
			require.True(t, h.env.IsWorkflowCompleted())
			require.NoError(t, h.env.GetWorkflowError())
			var res handoff.SagaResult
			require.NoError(t, h.env.GetWorkflowResult(&res))

			require.Equal(t, handoff.SagaConfirmed, res.Outcome)
			require.Equal(t, []string{"charge", "project:paid", "email:confirmation", "project:confirmed"}, h.fx.list())
			require.Len(t, h.emails, 1)
			require.Equal(t, tc.want, h.emails[0].ShippingAddress)
			require.Equal(t, testAmount, h.charges[0].Amount, "the charge is the same for both versions")
			h.env.AssertExpectations(t)
		})
	}
}

// A declined v2 order sends the payment-failed email without the address:
// the change is confined to the confirmation.
func TestSagaV2Declined(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{charge: func(int, activities.ChargeInput) (activities.ChargeResult, error) {
		return activities.ChargeResult{}, declinedErr()
	}})
	h.env.ExecuteWorkflow(OrderCreatedWorkflow, createdInputV2(t, "pm_card_chargeDeclined"))
	require.NoError(t, h.env.GetWorkflowError())
	require.Equal(t, []string{"charge", "project:payment_failed", "email:payment_failed"}, h.fx.list())
	require.Nil(t, h.emails[0].ShippingAddress)
}

// replay replays history against OrderCreatedWorkflow's code with the
// version guard answered by getVersion, registered under the real name.
func replay(t *testing.T, history *historypb.History, getVersion versionFunc) error {
	t.Helper()
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(orderCreatedWith(getVersion), workflow.RegisterOptions{Name: handoff.OrderCreatedWorkflowName})
	r.RegisterWorkflowWithOptions(OrderCancelledWorkflow, workflow.RegisterOptions{Name: handoff.OrderCancelledWorkflowName})
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelError})))
	return r.ReplayWorkflowHistory(logger, history)
}

func loadHistory(t *testing.T, file string) *historypb.History {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", file))
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	return h
}

// asInFlightV2 turns a confirmed v1 history recorded before the change into
// the history of a v2 order confirmed before the change: same commands (the
// old code ignored the address), v2 input. Such runs exist whenever v2
// events flow before the workflow change is deployed, the rollout
// docs/schema-evolution.md describes.
func asInFlightV2(t *testing.T, h *historypb.History) *historypb.History {
	t.Helper()
	attrs := h.Events[0].GetWorkflowExecutionStartedEventAttributes()
	require.NotNil(t, attrs, "the first event starts the workflow")
	dc := converter.GetDefaultDataConverter()
	var in handoff.EventInput
	require.NoError(t, dc.FromPayloads(attrs.Input, &in))
	require.Equal(t, orders.OrderCreatedV1, in.SchemaVersion)
	in.SchemaVersion, in.Payload = orders.OrderCreatedV2, v2Payload(t, in.Payload)
	payloads, err := dc.ToPayloads(in)
	require.NoError(t, err)
	attrs.Input = &commonpb.Payloads{Payloads: payloads.Payloads}
	return h
}

func alwaysNewest(workflow.Context, string, workflow.Version, workflow.Version) workflow.Version {
	return 1
}
func neverNew(workflow.Context, string, workflow.Version, workflow.Version) workflow.Version {
	return workflow.DefaultVersion
}

// orderCreatedWith is OrderCreatedWorkflow with its version guards
// answered by getVersion.
func orderCreatedWith(getVersion versionFunc) func(workflow.Context, handoff.EventInput) (handoff.SagaResult, error) {
	return func(ctx workflow.Context, in handoff.EventInput) (handoff.SagaResult, error) {
		return orderCreated(ctx, in, getVersion)
	}
}

// pinned answers v for the change id and what the recorded history says
// for every other change.
func pinned(id string, v workflow.Version) versionFunc {
	return func(ctx workflow.Context, changeID string, minV, maxV workflow.Version) workflow.Version {
		if changeID == id {
			return v
		}
		return workflow.GetVersion(ctx, changeID, minV, maxV)
	}
}

// requireNonDeterministic replays history with getVersion and requires
// Temporal's non-determinism error.
func requireNonDeterministic(t *testing.T, history *historypb.History, getVersion versionFunc) {
	t.Helper()
	err := replay(t, history, getVersion)
	require.Error(t, err)
	require.ErrorContains(t, err, "TMPRL1100", "Temporal's non-determinism error")
}

// The guard is what lets runs recorded before the change replay, and
// removing it breaks them; it also shows why workers cannot be rolled back
// once runs took the new path.
func TestShippingAddressVersionGuard(t *testing.T) {
	t.Parallel()
	inFlightV2 := func() *historypb.History { return asInFlightV2(t, loadHistory(t, "order_created_confirmed.json")) }

	t.Run("guarded code replays a v2 run confirmed before the change", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, replay(t, inFlightV2(), workflow.GetVersion))
	})

	t.Run("unguarded code fails on it", func(t *testing.T) {
		t.Parallel()
		requireNonDeterministic(t, inFlightV2(), alwaysNewest)
	})

	t.Run("guarded code replays a run recorded with the change", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, replay(t, loadHistory(t, "order_created_v2_confirmed.json"), workflow.GetVersion))
	})

	t.Run("code from before the change fails on a run recorded with it", func(t *testing.T) {
		t.Parallel()
		requireNonDeterministic(t, loadHistory(t, "order_created_v2_confirmed.json"), neverNew)
	})
}

// ChangeInventory's guard: runs recorded before the stock step replay
// without it, a run recorded with it replays with it, and the code from
// before the change cannot replay that run.
func TestInventoryVersionGuard(t *testing.T) {
	t.Parallel()
	t.Run("guarded code replays a run recorded before the change", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, replay(t, loadHistory(t, "order_created_confirmed.json"), workflow.GetVersion))
	})

	t.Run("unguarded code fails on it", func(t *testing.T) {
		t.Parallel()
		requireNonDeterministic(t, loadHistory(t, "order_created_confirmed.json"), pinned(ChangeInventory, 1))
	})

	t.Run("guarded code replays a run recorded with the change", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, replay(t, loadHistory(t, "order_created_inventory_reserved.json"), workflow.GetVersion))
	})

	t.Run("code from before the change fails on a run recorded with it", func(t *testing.T) {
		t.Parallel()
		requireNonDeterministic(t, loadHistory(t, "order_created_inventory_reserved.json"), pinned(ChangeInventory, workflow.DefaultVersion))
	})
}

// ChangeThreeDSecure's guard: the runs recorded with it (the customer
// authenticated; nobody did, and the saga canceled) replay with it, and the
// code from before the change, which reconciled a requires_action answer
// instead of waiting, cannot replay them.
func TestThreeDSecureVersionGuard(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"order_created_three_d_secure_completed.json", "order_created_three_d_secure_deadline.json"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, replay(t, loadHistory(t, file), workflow.GetVersion))
			requireNonDeterministic(t, loadHistory(t, file), pinned(ChangeThreeDSecure, workflow.DefaultVersion))
		})
	}
}
