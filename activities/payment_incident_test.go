package activities

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// A dispute marks the order disputed and counts once; the same event again
// (a late workflow after the saga took its signal) is not counted again.
// A failed refund marks refund_failed; an unknown kind is refused.
func TestRecordPaymentIncident(t *testing.T) {
	t.Parallel()
	f := setupProjection(t)
	dispute := PaymentIncidentInput{EventID: uuid.NewString(), OrderID: f.orderID, Kind: IncidentDispute,
		StripeEventID: "evt_dp", ObjectID: "dp_1", PaymentIntentID: "pi_1", Amount: 2500, Reason: "fraudulent"}

	res, err := f.acts.RecordPaymentIncident(ctxT(t), dispute)
	require.NoError(t, err)
	require.Equal(t, PaymentIncidentResult{First: true, Status: "pending"}, res)
	require.InDelta(t, 1, testutil.ToFloat64(f.acts.Metrics.Disputes), 0)

	res, err = f.acts.RecordPaymentIncident(ctxT(t), dispute)
	require.NoError(t, err)
	require.False(t, res.First)
	require.InDelta(t, 1, testutil.ToFloat64(f.acts.Metrics.Disputes), 0, "the same event counts once")
	require.EqualValues(t, 1, inboxDuplicates(t, f.reg, ConsumerName(StepDisputed)))

	refund := PaymentIncidentInput{EventID: uuid.NewString(), OrderID: f.orderID, Kind: IncidentRefundFailed,
		StripeEventID: "evt_re", ObjectID: "re_1", Reason: "expired_or_canceled_card"}
	res, err = f.acts.RecordPaymentIncident(ctxT(t), refund)
	require.NoError(t, err)
	require.True(t, res.First)
	require.InDelta(t, 1, testutil.ToFloat64(f.acts.Metrics.Disputes), 0, "a failed refund is no dispute")

	var disputeID string
	var disputed, refundFailed bool
	require.NoError(t, f.pool.QueryRow(context.Background(),
		`SELECT dispute_id, disputed_at IS NOT NULL, refund_failed_at IS NOT NULL FROM orders WHERE id = $1`, f.orderID).
		Scan(&disputeID, &disputed, &refundFailed))
	require.Equal(t, "dp_1", disputeID)
	require.True(t, disputed)
	require.True(t, refundFailed)
	require.Equal(t, "pending", f.row(t).Status, "no status change")

	_, err = f.acts.RecordPaymentIncident(ctxT(t), PaymentIncidentInput{EventID: uuid.NewString(), OrderID: f.orderID, Kind: "chargeback"})
	requireAppError(t, err, ErrTypeIllegalTransition, true)

	missing := dispute
	missing.EventID, missing.OrderID = uuid.NewString(), uuid.NewString()
	_, err = f.acts.RecordPaymentIncident(ctxT(t), missing)
	requireAppError(t, err, ErrTypeOrderNotFound, true)
}
