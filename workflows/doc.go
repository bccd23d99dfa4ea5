// Package workflows holds outflow's Temporal workflows: one run per outbox
// event, workflow ID = event_id, input [handoff.EventInput].
//
// # The payment saga
//
// [OrderCreatedWorkflow] charges the order (idempotency key derived from its
// event id), reconciles when the provider's answer was lost instead of
// guessing, projects paid, sends the confirmation email and projects
// confirmed; a declined card projects payment_failed and sends a
// payment-failed email. A charge the provider leaves processing, or waiting
// for the customer's 3-D Secure (requires_action), waits for the
// PaymentIntent's webhook; a 3-D Secure nobody completes by the deadline
// (PAYMENT_AUTHENTICATION_TIMEOUT) has its PaymentIntent canceled and fails
// the order like a decline, unless the cancel finds the payment made
// (three_d_secure.go).
//
// [OrderCancelledWorkflow] signals the saga to stop ("cancel"), waits for it
// to close, and from its result knows whether money was taken. The saga stops
// at a safe point: before the charge it never charges; with the charge's
// outcome unknown it reconciles first, so "charged" is known, not guessed;
// after the charge it sends no confirmation that has not gone out yet. The
// cancel workflow then refunds exactly once if there was a charge, projects
// cancelled and sends one cancellation email. Net charge is zero whenever the
// cancel arrives.
//
// # When compensation fails
//
// A refund that fails for good (the provider refuses it, or it cannot
// succeed within the refund key's lifetime) is not retried forever and not
// swallowed. The workflow:
//
//   - ends Failed with a non-retryable ApplicationError of type
//     "CompensationFailed" whose details name the order and PaymentIntent, so
//     it shows in the Temporal UI under ExecutionStatus="Failed" and
//     OrderId="...";
//   - sets its memo "compensation" to "failed" (with order_id,
//     payment_intent_id and the error) and its "status" query to stage
//     compensation_failed;
//   - increments the worker metric outflow_compensation_failures_total, on
//     which an alert fires;
//   - logs an error line with order_id and payment_intent_id.
//
// A refund that fails after the provider accepted it (the webhook
// charge.refund.updated with status failed) is the same failure, learnt
// later: the order is marked refund_failed and the run that learns it
// (PaymentWebhookLateWorkflow, or a saga compensating a Temporal cancel)
// fails CompensationFailed the same way (payment_incidents.go). A dispute
// (charge.dispute.created) marks the order disputed and is counted in
// outflow_disputes_total, for an operator.
//
// The order keeps its status (paid or confirmed) and no cancellation email
// is sent, because the customer has not been refunded. The operator refunds
// by hand at the provider, or fixes the cause and resets the workflow
// (`temporal workflow reset`): the refund key is derived from the charge, so
// a retried refund can never be a second one.
package workflows
