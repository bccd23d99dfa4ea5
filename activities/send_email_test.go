package activities

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// The confirmation prints the shipping address when the input has one. An
// input without one (every email scheduled before the field existed, whose
// input is frozen in its workflow's history) renders exactly as before, so
// its retries keep sending the payload the provider holds under the key.
func TestConfirmationEmailShippingAddress(t *testing.T) {
	t.Parallel()
	in := SendEmailInput{EventID: "e", OrderID: "o-1", Kind: EmailConfirmation, To: "ada@example.com", Amount: 2500, Currency: "usd"}

	old := composeEmail("", in)
	require.Equal(t, "We received your payment of 2500 usd (minor units). Your order o-1 is confirmed.", old.Text,
		"the body of an input without an address must not change")

	in.ShippingAddress = &ShippingAddress{Name: "Ada Lovelace", Line1: "Unter den Linden 1", City: "Berlin", PostalCode: "10117", Country: "DE"}
	m := composeEmail("", in)
	require.Equal(t, old.Text+"\n\nIt will ship to:\nAda Lovelace\nUnter den Linden 1\n10117 Berlin\nDE", m.Text)
	require.Equal(t, old.Subject, m.Subject)

	in.ShippingAddress.Line2 = "3. OG"
	require.Contains(t, composeEmail("", in).Text, "Unter den Linden 1\n3. OG\n10117 Berlin")

	// Other kinds do not print it.
	in.Kind = EmailPaymentFailed
	require.NotContains(t, composeEmail("", in).Text, "ship")
}

// Through the provider: one email under the key, and a retry with the same
// input (address included) replays it. The retry reaches the provider only
// when the first attempt died between the send and its inbox row, as
// simulated here by deleting the row.
func TestConfirmationEmailWithAddressIsIdempotent(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	pool := withDB(t, acts)
	in := SendEmailInput{EventID: uuid.NewString(), OrderID: uuid.NewString(), Kind: EmailConfirmation, To: "ada@example.com",
		Amount: 2500, Currency: "usd",
		ShippingAddress: &ShippingAddress{Name: "Ada", Line1: "Unter den Linden 1", City: "Berlin", PostalCode: "10117", Country: "DE"}}
	first, err := acts.SendEmail(ctxT(t), in)
	require.NoError(t, err)
	_, err = pool.Exec(ctxT(t), `DELETE FROM processed_events WHERE consumer_name = $1 AND event_id = $2`,
		EmailConsumerName(in.Kind), in.EventID)
	require.NoError(t, err)
	again, err := acts.SendEmail(ctxT(t), in)
	require.NoError(t, err)
	require.Equal(t, first, again)
	require.Len(t, b.sim.Ledger().Emails, 1)
}
