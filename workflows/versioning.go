package workflows

import "go.temporal.io/sdk/workflow"

// Workflow code changes that alter the commands a run issues are guarded
// with workflow.GetVersion, so a run that reached the changed point under
// the old code replays it the old way. One change ID per change, listed
// here; a guard stays until no history recorded before it can still be
// replayed (docs/schema-evolution.md).
const (
	// ChangeShippingAddress (version 1): the confirmation of an order with
	// a shipping address (OrderCreated v2) prints the address in the email
	// and records the destination country in the memo [MemoShipsTo] — a new
	// command that a v2 run confirmed before the change never issued.
	ChangeShippingAddress = "confirmation-shipping-address"

	// ChangeSafeCharge (version 1) closes three holes found in review:
	//   - the charge key's lifetime is counted from the OrderCreated event's
	//     commit, not from this run's start, so a new run of the same event
	//     (an operator's replay of a failed saga a day later) reconciles
	//     instead of charging again under an expired key;
	//   - charge rounds wait between them, and the charge and projection
	//     activities wait for cancellation to settle, so a Temporal cancel
	//     cannot compensate while a charge or a projection is still running;
	//   - a run that already completed does not compensate when a cancel
	//     arrives in the same workflow task.
	ChangeSafeCharge = "safe-charge-and-compensation"

	// ChangeTimeEdges (version 1) makes the sagas hold at the edges of time
	// (late, replayed and forgotten events):
	//   - the payment saga asks the order's authoritative state (our
	//     database) before any charge: a cancelled or cancel-requested order
	//     is never charged, an order whose saga already finished is not
	//     charged or mailed again, whatever the run's age or origin;
	//   - a first delivery ([handoff.DeliveryFirst]) counts its key's lifetime from
	//     its own first attempt, so a delivery a day late charges instead of
	//     reporting a decline that never happened; a replay or an unknown
	//     delivery past the key's lifetime reconciles completely first and
	//     charges only when the provider holds no charge;
	//   - reconciliation walks the provider's list in bounded steps with a
	//     cursor kept in the workflow;
	//   - every terminal failure of a cancel is a CompensationFailed.
	ChangeTimeEdges = "time-edges"

	// ChangeInventory (version 1): the payment saga reserves the order's
	// stock at the inventory service before it charges (when the worker has
	// an INVENTORY_URL, which the run records through the local activity
	// InventorySettings) and waits for the inventory's answer signal; a
	// rejection or no answer fails the order before any money moves, a
	// declined charge or a cancel releases the reservation. A run recorded
	// before the change has no marker and replays without the step.
	ChangeInventory = "inventory-reservation"

	// ChangePaymentWebhooks (version 1): a charge the provider left
	// processing waits, up to [ProcessingWebhookWait], for the
	// PaymentIntent's webhook (signal handoff.SignalPaymentWebhook):
	// payment_intent.succeeded charges, payment_intent.payment_failed
	// declines; no webhook, or a cancel, falls back to reconciliation. The
	// marker is taken only when a charge answers processing, so a run that
	// reconciled a processing charge before the change replays as it was.
	ChangePaymentWebhooks = "payment-webhooks"

	// ChangeThreeDSecure (version 1): a charge that answers requires_action
	// (3-D Secure) waits, up to the deadline the charge activity reports
	// (PAYMENT_AUTHENTICATION_TIMEOUT, [activities.DefaultAuthenticationTimeout]),
	// for the PaymentIntent's webhook: payment_intent.succeeded charges,
	// payment_intent.payment_failed declines. No webhook by the deadline,
	// or a cancel, cancels the PaymentIntent (CancelPayment), which either
	// ends it canceled — the order fails without a charge
	// ([ReasonAuthenticationNotCompleted]) and its stock is released — or
	// finds it succeeded, and the order is paid. Before the change a
	// requires_action answer was a decline; the marker is taken only when a
	// charge (or its reconciliation) answers requires_action, so runs
	// recorded before it replay as they were.
	ChangeThreeDSecure = "three-d-secure"

	// ChangePaymentIncidents (version 1): a dispute (charge.dispute.created)
	// or a refund that failed after it was accepted (charge.refund.updated,
	// status failed) is recorded on the order by the activity
	// RecordPaymentIncident (steps disputed, refund_failed) and reported: a
	// dispute in outflow_disputes_total, a failed refund as a compensation
	// failure. The payment saga handles them while it waits for a webhook
	// and takes every unread one as it closes (a saga compensating a
	// Temporal cancel fails CompensationFailed on its refund's failure);
	// PaymentWebhookLateWorkflow handles them for a closed saga and fails
	// CompensationFailed on a failed refund. Before the change both only
	// logged them. The marker is taken only when such a webhook is handled,
	// so runs recorded before it replay as they were.
	ChangePaymentIncidents = "payment-incidents"
)

// MemoShipsTo is the memo key holding the ISO 3166-1 country a confirmed
// order ships to, for operators browsing runs in the Temporal UI (the full
// address is personal data and stays out of the visibility store).
const MemoShipsTo = "ships_to"

// versionFunc is the signature of workflow.GetVersion.
type versionFunc func(ctx workflow.Context, changeID string, minSupported, maxSupported workflow.Version) workflow.Version
