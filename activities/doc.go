// Package activities holds the payment saga's side effects: the calls to the
// payment provider (Stripe's API), the email provider (a Resend-style API) and
// the order projection in outflow's own database.
//
// Temporal runs every activity at least once, so each one is written to be
// repeated without repeating its effect:
//
//   - provider calls carry an idempotency key derived from the outbox event id
//     and the step ([ChargeKey], [RefundKey], [EmailKey]), identical on every
//     retry, so the provider stores the effect once and replays its first
//     answer;
//   - a charge whose answer was lost (timeout, 5xx, connection reset) is not
//     guessed at: it surfaces as PaymentOutcomeUnknown and the workflow asks
//     [Activities.ReconcilePayment] for the truth before charging again;
//   - the projection writes its inbox row (package inbox) and the status
//     change in one transaction, so a duplicate delivery is acknowledged
//     without effect; an email, an effect outside the database, is recorded
//     in the inbox once the provider accepted it.
//
// Activities are methods on [Activities], registered once by the worker;
// workflows call them through a typed nil pointer.
package activities
