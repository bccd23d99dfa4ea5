package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/orders"
)

// ProcessingWebhookWait is how long the payment saga waits for the webhook
// of a charge the provider left processing ([ChangePaymentWebhooks]) before
// it falls back to reconciliation, which asks the provider itself.
const ProcessingWebhookWait = 24 * time.Hour

// webhookOutcome is what a payment webhook says of the charge the saga waits for.
type webhookOutcome int

const (
	webhookNone      webhookOutcome = iota // no webhook settled it within the wait
	webhookSucceeded                       // payment_intent.succeeded
	webhookFailed                          // payment_intent.payment_failed
)

// awaitProcessing waits, up to ProcessingWebhookWait, for the webhook that
// settles the processing PaymentIntent piID (signal
// [handoff.SignalPaymentWebhook], each Stripe event once: the receiver
// drops a re-delivery of the same outbox event, and the order API's inbox
// one of the same Stripe event). A webhook of another PaymentIntent, or one
// that says it is still processing, does not end the wait; a cancel signal
// does (webhookNone: reconciliation then tells the truth).
func (s *saga) awaitProcessing(ctx workflow.Context, piID string) (webhookOutcome, orders.PaymentWebhookReceived, error) {
	workflow.GetLogger(ctx).Info("the charge is processing: waiting for its webhook", "order_id", s.order.OrderID, "payment_intent_id", piID)
	return s.awaitWebhook(ctx, piID, ProcessingWebhookWait, StageAwaitingWebhook)
}

// awaitWebhook waits up to wait, at stage, for the webhook that settles the
// PaymentIntent piID (see awaitProcessing).
func (s *saga) awaitWebhook(ctx workflow.Context, piID string, wait time.Duration, stage Stage) (webhookOutcome, orders.PaymentWebhookReceived, error) {
	deadline := workflow.Now(ctx).Add(wait)
	logger := workflow.GetLogger(ctx)
	s.setStage(ctx, stage)
	for {
		remaining := deadline.Sub(workflow.Now(ctx))
		if remaining <= 0 {
			logger.Warn("no webhook settled the charge within its wait", "order_id", s.order.OrderID,
				"payment_intent_id", piID, "wait", wait, "stage", stage)
			return webhookNone, orders.PaymentWebhookReceived{}, nil
		}
		ev, got, cancelled := s.awaitSignal(ctx, s.webhooks, remaining)
		switch {
		case ctx.Err() != nil:
			return webhookNone, orders.PaymentWebhookReceived{}, ctx.Err()
		case cancelled:
			return webhookNone, orders.PaymentWebhookReceived{}, nil
		case !got:
			continue
		}
		// Decoding JSON is deterministic (see orderCreated).
		w, err := orders.DecodePaymentWebhookReceived(ev.SchemaVersion, ev.Payload) //workflowcheck:ignore
		if err != nil {
			logger.Error("a payment webhook the saga cannot read; ignored", "order_id", s.order.OrderID, "event_id", ev.EventID, "error", err)
			continue
		}
		if incidentOf(w) != "" {
			// A dispute or a failed refund: not this wait's business, but an
			// operator's ([ChangePaymentIncidents]).
			rf, err := s.incident(ctx, ev.EventID, w)
			if err != nil {
				return webhookNone, orders.PaymentWebhookReceived{}, err
			}
			if rf {
				s.reportLateRefund(ctx, w)
			}
			continue
		}
		if w.PaymentIntentID != piID {
			logger.Info("a payment webhook of another PaymentIntent; ignored", "order_id", s.order.OrderID,
				"stripe_event_id", w.StripeEventID, "type", w.Type, "payment_intent_id", w.PaymentIntentID)
			continue
		}
		switch w.Type {
		case "payment_intent.succeeded":
			return webhookSucceeded, w, nil
		case "payment_intent.payment_failed":
			return webhookFailed, w, nil
		}
		logger.Info("a payment webhook that does not settle the charge", "order_id", s.order.OrderID,
			"stripe_event_id", w.StripeEventID, "type", w.Type)
	}
}

// processingSettled handles a charge answer that was processing: with
// [ChangePaymentWebhooks] in force, the saga waits for the webhook and
// reports settled (s.charge set) when one came; otherwise the caller
// reconciles as before.
func (s *saga) processingSettled(ctx workflow.Context, err error) (settled bool, werr error) {
	d, ok := activities.PaymentProcessing(err)
	if !ok || s.getVersion(ctx, ChangePaymentWebhooks, workflow.DefaultVersion, 1) < 1 {
		return false, nil
	}
	outcome, w, werr := s.awaitProcessing(ctx, d.PaymentIntentID)
	switch {
	case werr != nil:
		return false, werr
	case outcome == webhookSucceeded:
		workflow.GetLogger(ctx).Info("the processing charge succeeded (webhook)", "order_id", s.order.OrderID,
			"payment_intent_id", d.PaymentIntentID, "stripe_event_id", w.StripeEventID)
		s.charged(d.PaymentIntentID)
		return true, nil
	case outcome == webhookFailed:
		workflow.GetLogger(ctx).Info("the processing charge failed (webhook)", "order_id", s.order.OrderID,
			"payment_intent_id", d.PaymentIntentID, "stripe_event_id", w.StripeEventID, "failure_code", w.FailureCode)
		s.status.LastError = "payment failed: " + w.FailureCode
		s.charge = declined
		return true, nil
	}
	return false, nil
}
