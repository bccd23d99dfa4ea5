package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/providersim"
)

func TestScenarioExpectations(t *testing.T) {
	t.Parallel()
	byName := map[string]scenario{}
	for _, sc := range scenarios() {
		byName[sc.name] = sc
	}
	require.Len(t, byName, 5, "scenario names must be unique")

	happy := byName["happy path"].expect
	require.Empty(t, happy.check(observed{status: "confirmed", charges: 1, paymentIntents: 1, emails: []string{"confirmation"}}))
	require.Contains(t, happy.check(observed{status: "paid", charges: 1, paymentIntents: 1, emails: []string{"confirmation"}}), "status paid")
	require.Contains(t, happy.check(observed{status: "confirmed", charges: 2, paymentIntents: 2, emails: []string{"confirmation"}}), "charges=2")
	require.Contains(t, happy.check(observed{status: "confirmed", charges: 1, paymentIntents: 1, emails: []string{"confirmation", "confirmation"}}), "emails")
	require.Contains(t, happy.check(observed{status: "confirmed", charges: 1, paymentIntents: 1, emails: []string{"confirmation"}, duplicateEffects: 1}), "stored twice")

	timeout := byName["provider timeout (outcome unknown)"].expect
	require.Contains(t, timeout.check(observed{status: "confirmed", charges: 1, paymentIntents: 2, emails: []string{"confirmation"}}), "2 payment intents",
		"a lost answer must be reconciled, never charged again")

	declined := byName["declined card"].expect
	require.Empty(t, declined.check(observed{status: "payment_failed", paymentIntents: 1, emails: []string{"payment_failed"}}))

	racing := byName["cancel racing the charge"].expect
	require.Empty(t, racing.check(observed{status: "cancelled", emails: []string{"cancellation"}}), "never charged")
	require.Empty(t, racing.check(observed{status: "cancelled", charges: 1, refunds: 1, paymentIntents: 1, emails: []string{"cancellation"}}), "refunded")
	require.Empty(t, racing.check(observed{status: "cancelled", charges: 1, refunds: 1, paymentIntents: 1, emails: []string{"confirmation", "cancellation"}}), "cancel after the confirmation mail")
	require.Contains(t, racing.check(observed{status: "cancelled", charges: 1, paymentIntents: 1, emails: []string{"cancellation"}}), "net charge not zero")
	require.Contains(t, racing.check(observed{status: "cancelled", emails: []string{"cancellation", "cancellation"}}), "emails")

	late := byName["cancel after confirmation"].expect
	require.Empty(t, late.check(observed{status: "cancelled", charges: 1, refunds: 1, paymentIntents: 1, emails: []string{"confirmation", "cancellation"}}))
	require.Contains(t, late.check(observed{status: "cancelled", charges: 1, paymentIntents: 1, emails: []string{"confirmation", "cancellation"}}), "refunds=0")
}

func TestObserveReadsOnlyTheOrdersEffects(t *testing.T) {
	t.Parallel()
	l := providersim.Ledger{
		PaymentIntents: []providersim.LedgerPaymentIntent{
			{ID: "pi_1", Status: "succeeded", IdempotencyKey: "k1", Metadata: map[string]string{"order_id": "o1"}},
			{ID: "pi_2", Status: "requires_payment_method", IdempotencyKey: "k2", Metadata: map[string]string{"order_id": "o1"}},
			{ID: "pi_3", Status: "succeeded", IdempotencyKey: "k3", Metadata: map[string]string{"order_id": "o2"}},
		},
		Refunds: []providersim.LedgerRefund{
			{ID: "re_1", PaymentIntent: "pi_1", Status: "succeeded", IdempotencyKey: "r1"},
			{ID: "re_2", PaymentIntent: "pi_3", Status: "succeeded", IdempotencyKey: "r2"},
		},
		Emails: []providersim.LedgerEmail{
			{ID: "e1", Tags: map[string]string{"order_id": "o1", "kind": "confirmation"}, IdempotencyKey: "m1"},
			{ID: "e2", Tags: map[string]string{"order_id": "o1", "kind": "cancellation"}, IdempotencyKey: "m1"},
			{ID: "e3", Tags: map[string]string{"order_id": "o2", "kind": "confirmation"}, IdempotencyKey: "m3"},
		},
	}
	o := observe(l, "o1", "cancelled")
	require.Equal(t, observed{status: "cancelled", charges: 1, refunds: 1, paymentIntents: 2,
		emails: []string{"confirmation", "cancellation"}, duplicateEffects: 1}, o)
}

func TestPrintTable(t *testing.T) {
	t.Parallel()
	sc := scenarios()
	rows := []result{
		{orderID: "0191aaaa-bbbb", scenario: sc[1], observed: observed{status: "confirmed", charges: 1, emails: []string{"confirmation"}},
			workflows: []workflowLink{{eventType: "OrderCreated", workflowID: "wf-1", url: "http://127.0.0.1:8233/namespaces/default/workflows/wf-1"}}},
		{orderID: "0191cccc-dddd", scenario: sc[2], observed: observed{status: "pending"}, mismatch: "status pending, want payment_failed",
			workflows: []workflowLink{{eventType: "OrderCreated", workflowID: "wf-2"}}},
	}
	var buf bytes.Buffer
	require.False(t, printTable(&buf, rows), "one row mismatched")
	out := buf.String()
	require.Contains(t, out, "ORDER")
	require.Contains(t, out, "happy path")
	require.Contains(t, out, "MISMATCH 0191cccc-dddd (declined card): status pending, want payment_failed")
	require.Contains(t, out, "http://127.0.0.1:8233/namespaces/default/workflows/wf-1")
	require.Contains(t, out, "workflow id wf-2")

	buf.Reset()
	require.True(t, printTable(&buf, rows[:1]))
}
