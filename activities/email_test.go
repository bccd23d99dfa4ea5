package activities

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/providersim"
)

// One email per event and kind: a retry under the same key (even after an
// error_500) is the same email, a retry after it was sent is an inbox
// duplicate, another kind is another email, and every email carries the
// order_id and kind tags.
func TestEmailKeyStability(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	withDB(t, acts)
	in := SendEmailInput{EventID: uuid.NewString(), OrderID: uuid.NewString(), Kind: EmailConfirmation,
		To: "ada@example.com", Amount: 2500, Currency: "usd"}

	b.fault(t, providersim.OperationEmailsSend, "error_500")
	_, err := acts.SendEmail(ctxT(t), in)
	require.Error(t, err)
	requireRetryable(t, err)

	first, err := acts.SendEmail(ctxT(t), in)
	require.NoError(t, err)
	require.False(t, first.Duplicate)
	again, err := acts.SendEmail(ctxT(t), in)
	require.NoError(t, err)
	require.Equal(t, SendEmailResult{Duplicate: true}, again)

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
	withDB(t, acts)
	_, err := acts.SendEmail(ctxT(t), SendEmailInput{EventID: uuid.NewString(), OrderID: "o", Kind: EmailConfirmation, To: "not an address"})
	requireAppError(t, err, ErrTypeEmailRejected, true)
}

// SendEmail keeps its inbox in our database: without one it refuses to
// send rather than send without remembering.
func TestEmailNeedsDatabase(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	_, err := acts.SendEmail(ctxT(t), SendEmailInput{EventID: uuid.NewString(), OrderID: "o", Kind: EmailConfirmation, To: "ada@example.com"})
	require.ErrorContains(t, err, "no database configured for SendEmail's inbox")
	require.Empty(t, b.sim.Ledger().Emails)
}

// activity.email.after_provider fails the activity after the email was sent
// and recorded: the retry finds the inbox row and sends nothing.
func TestEmailFailpointAfterProvider(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	withDB(t, acts)
	fps, err := failpoints.Parse(failpoints.ActivityEmailAfterProvider + "=error")
	require.NoError(t, err)
	acts.Failpoints = fps
	in := SendEmailInput{EventID: uuid.NewString(), OrderID: uuid.NewString(), Kind: EmailConfirmation, To: "ada@example.com"}
	_, err = acts.SendEmail(ctxT(t), in)
	require.ErrorIs(t, err, failpoints.ErrInjected)

	acts.Failpoints, _ = failpoints.Parse("")
	res, err := acts.SendEmail(ctxT(t), in)
	require.NoError(t, err)
	require.True(t, res.Duplicate)
	require.Len(t, b.sim.Ledger().Emails, 1)
}

// An operator's replay days later: the provider has long forgotten the
// email's key, but our inbox has not, so nothing is sent again.
func TestEmailDeduplicatedLocally(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	pool := withDB(t, acts)
	reg := withInbox(t, acts)
	in := SendEmailInput{EventID: uuid.NewString(), OrderID: uuid.NewString(), Kind: EmailCancellation,
		To: "ada@example.com", Amount: 2500, Currency: "usd", Refunded: true}
	first, err := acts.SendEmail(ctxT(t), in)
	require.NoError(t, err)
	require.NotEmpty(t, first.EmailID)

	b.clock.Advance(25 * time.Hour) // past the provider's 24 h key lifetime
	again, err := acts.SendEmail(ctxT(t), in)
	require.NoError(t, err)
	require.Len(t, b.sim.Ledger().Emails, 1, "the replayed run sends nothing")
	require.Equal(t, SendEmailResult{Duplicate: true}, again)
	require.Equal(t, 1.0, inboxDuplicates(t, reg, "email.cancellation"))
	require.True(t, inboxHolds(t, pool, "email.cancellation", in.EventID), "one inbox row per email: consumer email.<kind>, the event's id")

	// Without the inbox row the provider would have sent it again: the
	// inbox, not the key, is what kept it single.
	_, err = pool.Exec(ctxT(t), `DELETE FROM processed_events`)
	require.NoError(t, err)
	_, err = acts.SendEmail(ctxT(t), in)
	require.NoError(t, err)
	require.Len(t, b.sim.Ledger().Emails, 2)
}

func asAny(err error, target any) bool { return errors.As(err, target) }
