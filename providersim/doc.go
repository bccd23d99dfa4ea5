// Package providersim is a fake of the two external providers outflow's
// activities call: a Stripe-compatible payment API and a Resend-compatible
// email API. It is a real HTTP server speaking the real wire protocols, so the
// activities run the same code (github.com/stripe/stripe-go/v76 with a custom
// backend URL, a plain HTTP client for email) against the simulator as
// against the real providers. It is the embedded default when no real
// provider is configured (make demo) and the provider every activity test
// talks to.
//
// # What it speaks
//
// Payments, form-encoded like stripe-go sends them, JSON answers shaped like
// Stripe's objects (API version 2023-10-16, the one stripe-go v76 pins):
//
//	POST /v1/payment_intents         create (and confirm with confirm=true)
//	GET  /v1/payment_intents/{id}    retrieve
//	POST /v1/payment_intents/{id}/cancel  cancel (requires_payment_method, requires_confirmation,
//	                                 requires_action, processing; else payment_intent_unexpected_state)
//	GET  /v1/payment_intents/search  search (query language subset, see search.go)
//	GET  /v1/payment_intents         list, newest first, created[gt|gte|lt|lte] and cursors
//	POST /v1/refunds                 full and partial refunds, never more than charged
//	GET  /v1/refunds[/{id}]          retrieve and list (payment_intent filter)
//
// Any key starting with sk_test_ is accepted (Bearer or Basic auth); live
// keys are refused so that a misconfigured deployment can never believe it
// charged a real card. Test payment methods: pm_card_visa and
// pm_card_mastercard succeed, pm_card_chargeDeclined is declined with
// generic_decline, pm_card_chargeDeclinedInsufficientFunds with
// insufficient_funds; pm_card_authenticationRequired (3-D Secure) and
// pm_card_threeDSecure2Required (3DS2) answer requires_action with Stripe's
// use_stripe_sdk next_action and charge only when a test authenticates
// (below); pm_sim_processing stays processing until settled; any other value
// is resource_missing, as at Stripe.
//
// Email, Resend-compatible: POST /emails with a JSON body and a Bearer re_...
// key, answering {"id": "..."}.
//
// # Idempotency
//
// Both APIs implement their provider's Idempotency-Key rules (idempotency.go):
// the first response of a key is stored once the endpoint starts executing and
// replayed verbatim (errors included) for the same parameters; other
// parameters are an idempotency error; a key whose first request is still
// running is a 409; keys expire after 24 hours of the injected clock; keys are
// scoped per API key. The effect and the stored response are committed in one
// critical section, so a replay never adds an effect.
//
// # Test hooks
//
// GET /_sim/ledger lists every effect once (the JSON fixed in docs/reference.md),
// POST /_sim/faults queues faults for the next calls of an operation
// (payment_intents.create, payment_intents.cancel, refunds.create,
// emails.send: error_500, latency:DURATION, timeout_after_commit; decline
// for payment_intents.create only), DELETE /_sim/faults clears them, POST /_sim/reset forgets everything. The same
// hooks exist in process ([Simulator.Ledger], [Simulator.InjectFault]) and
// over HTTP ([Client]).
//
// # Webhooks
//
// With Options.WebhookURL set, every confirmation and every later change a
// test plays (POST /_sim/payment_intents/{id}/authenticate with
// {"outcome": "succeeded"|"failed"} for 3-D Secure — succeeded charges,
// payment_intent.succeeded; failed leaves requires_payment_method,
// payment_intent.payment_failed — .../settle for a pm_sim_processing
// payment, .../dispute, POST /_sim/refunds/{id}/fail; a cancel makes
// payment_intent.canceled) becomes a Stripe
// event delivered like Stripe delivers it: signed (Stripe-Signature,
// HMAC-SHA256 under Options.WebhookSecret), retried with a doubling backoff
// until a 2xx, at least once. GET /_sim/webhooks lists the deliveries;
// /_sim/webhooks/{id}/resend duplicates one and /_sim/webhooks/hold and
// /release reorder them (webhooks.go).
//
// # Known differences from the real providers
//
//   - Stripe's search index lags writes by up to a minute; the simulator's
//     search is immediately consistent. Reconciliation code must not rely on
//     that (look a key up by replaying it while it is alive; search after).
//   - Only the parameters listed in payment_intent_*.go and refunds.go are
//     accepted; anything else is parameter_unknown, so code that works here
//     sends nothing Stripe would not understand, but not everything Stripe
//     understands works here.
//   - Since API version 2023-08-16 Stripe enables automatic payment methods
//     by default and then refuses confirm=true without a return_url unless the
//     request sends payment_method_types[]=card or
//     automatic_payment_methods[allow_redirects]=never. The simulator accepts
//     those parameters but does not enforce the rule: send one of them.
package providersim
