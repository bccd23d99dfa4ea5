package activities

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/providersim"
)

// One email per event and kind: a retry under the same key (even after an
// error_500) is the same email, another kind is another email, and every
// email carries the order_id and kind tags.
func TestEmailKeyStability(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	in := SendEmailInput{EventID: uuid.NewString(), OrderID: uuid.NewString(), Kind: EmailConfirmation,
		To: "ada@example.com", Amount: 2500, Currency: "usd"}

	b.fault(t, providersim.OperationEmailsSend, "error_500")
	_, err := acts.SendEmail(ctxT(t), in)
	require.Error(t, err)
	requireRetryable(t, err)

	first, err := acts.SendEmail(ctxT(t), in)
	require.NoError(t, err)
	again, err := acts.SendEmail(ctxT(t), in)
	require.NoError(t, err)
	require.Equal(t, first, again)

	other := in
	other.Kind = EmailPaymentFailed
	_, err = acts.SendEmail(ctxT(t), other)
	require.NoError(t, err)

	emails := b.sim.Ledger().Emails
	require.Len(t, emails, 2)
	require.Equal(t, EmailKey(in.EventID, EmailConfirmation), emails[0].IdempotencyKey)
	require.Equal(t, map[string]string{TagOrderID: in.OrderID, TagKind: "confirmation"}, emails[0].Tags)
	require.Equal(t, []string{"ada@example.com"}, emails[0].To)
	require.Equal(t, "payment_failed", emails[1].Tags[TagKind])
}

// A message the provider rejects (no valid recipient) is final.
func TestEmailRejected(t *testing.T) {
	t.Parallel()
	acts, _ := setup(t)
	_, err := acts.SendEmail(ctxT(t), SendEmailInput{EventID: uuid.NewString(), OrderID: "o", Kind: EmailConfirmation, To: "not an address"})
	requireAppError(t, err, ErrTypeEmailRejected, true)
}

func asAny(err error, target any) bool { return errors.As(err, target) }
