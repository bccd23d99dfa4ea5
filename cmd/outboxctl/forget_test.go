package main

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
)

// TestForgetCustomer: the customer's key is erased (their payloads no longer
// decode, another customer's still do) with an audit row; a customer whose
// orders still have a workflow to start is refused, naming the order and
// the event, unless --force; the reason is mandatory; and no log line
// carries the address. (testsuite's TestForgetWaitsForWorkflowsThatNeedTheKey
// covers running workflows, with Temporal.)
func TestForgetCustomer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	keys, err := codec.ParseKeys(codec.NewKeySpec("k1"))
	require.NoError(t, err)
	dc := func() *codec.DataConverter {
		return codec.NewDataConverter(keys, codec.Options{Store: codec.NewPGStore(b.Pool)})
	}
	input := func(email string) handoff.EventInput {
		return handoff.EventInput{EventType: orders.EventOrderCreated, Payload: []byte(`{"customer_email":"` + email + `"}`)}
	}
	ada, err := dc().ToPayloads(input("ada@example.com"))
	require.NoError(t, err)
	grace, err := dc().ToPayloads(input("grace@example.com"))
	require.NoError(t, err)
	// Ada's order is still pending: its workflow needs her key.
	created, err := orders.CreateOrder(b.Ctx, b.Pool, orders.CreateOrderParams{CustomerEmail: "Ada@Example.com", Currency: "usd",
		PaymentMethod: "pm_card_visa", Items: []orders.Item{{SKU: "SKU-1", Quantity: 1, UnitAmount: 2500}}})
	require.NoError(t, err)

	r := b.Ctl(t, "forget-customer", "ada@example.com", "--yes")
	require.Equal(t, 2, r.Code)
	require.Contains(t, r.Stderr, "--reason is mandatory")

	r = b.Ctl(t, "forget-customer", "ada@example.com", "--reason", "GDPR request PRIV-7", "--yes")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "nothing was forgotten: 1 workflows of the customer's 1 orders still need the key")
	require.Contains(t, r.Stderr, "order "+created.OrderID.String()+": OrderCreated event "+created.EventID.String()+" is not published yet")
	var in handoff.EventInput
	require.NoError(t, dc().FromPayloads(ada, &in), "nothing was forgotten")
	r = b.Ctl(t, "forget-customer", "ada@example.com", "--reason", "GDPR request PRIV-7", "--wait", "1s", "--force", "--yes")
	require.Equal(t, 2, r.Code, "--wait and --force exclude each other")

	// The order is settled and its events are past the retention (cleanup
	// deleted them): no workflow is left to ask Temporal about.
	b.Exec(t, `UPDATE orders SET status = 'confirmed' WHERE id = $1`, created.OrderID)
	require.EqualValues(t, 1, outboxtest.DeleteEvents(t, b.Pool, outboxtest.Match{AggregateType: orders.AggregateType, AggregateID: created.OrderID.String()}))
	// The binary without --yes, stdin no terminal: a dry run that forgets
	// nothing (the library's TestEveryChangeDryRunsWithoutYes has the
	// other commands).
	exe := proc.Build(t, "outboxctl", ".")
	out, err := exec.CommandContext(b.Ctx, exe, "forget-customer", "ada@example.com", "--reason", "GDPR request PRIV-7", "--database-url", b.URL).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "dry run (stdin is not a terminal, so there is nobody to confirm): nothing was forgotten")
	require.NoError(t, dc().FromPayloads(ada, &in), "the dry run forgot nothing")
	r = b.OK(t, "forget-customer", "ADA@example.com ", "--reason", "GDPR request PRIV-7", "--actor", "dpo", "--yes")
	require.Contains(t, r.Stdout, "forgot customer key "+string(ada.Payloads[0].Metadata[codec.MetadataKeyID]))
	require.Contains(t, r.Stdout, "PostgreSQL still holds the customer's 1 orders")
	require.Contains(t, r.Stderr, "customer forgotten")
	require.NotContains(t, r.Stderr, "ada@example.com", "the log names the key and a hash, never the address")

	err = dc().FromPayloads(ada, &in)
	require.ErrorIs(t, err, codec.ErrErased)
	require.NoError(t, dc().FromPayloads(grace, &in))

	var by, reason string
	require.NoError(t, b.Pool.QueryRow(b.Ctx, `SELECT erased_by, reason FROM customer_key_erasures`).Scan(&by, &reason))
	require.Equal(t, "dpo", by)
	require.Equal(t, "GDPR request PRIV-7", reason)

	r = b.OK(t, "forget-customer", "ada@example.com", "--reason", "asked twice", "--actor", "dpo", "--yes")
	require.Contains(t, r.Stdout, "no customer key to erase")
	require.Contains(t, r.Stdout, "forgotten before")

	// --force forgets a customer whose orders are still in flight.
	_, err = orders.CreateOrder(b.Ctx, b.Pool, orders.CreateOrderParams{CustomerEmail: "grace@example.com", Currency: "usd",
		PaymentMethod: "pm_card_visa", Items: []orders.Item{{SKU: "SKU-1", Quantity: 1, UnitAmount: 2500}}})
	require.NoError(t, err)
	r = b.OK(t, "forget-customer", "grace@example.com", "--reason", "fraud ring takedown, legal hold lifted", "--force", "--yes")
	require.Contains(t, r.Stdout, "--force: 1 workflows still needed the key")
	require.ErrorIs(t, dc().FromPayloads(grace, &in), codec.ErrErased)
}
