package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/activities"
)

// StageAwaitingAuthentication: the charge answered requires_action and the
// saga waits for the customer's 3-D Secure ([ChangeThreeDSecure]).
const StageAwaitingAuthentication Stage = "awaiting_authentication"

// ReasonAuthenticationNotCompleted (handoff.SagaResult.Reason): the
// customer did not complete 3-D Secure within the deadline, and the saga
// canceled the PaymentIntent.
const ReasonAuthenticationNotCompleted = "authentication_not_completed"

// threeDSecure reports whether [ChangeThreeDSecure] is in force. It is
// asked only when a charge answers requires_action, so the marker is
// recorded only by runs that meet one.
func (s *saga) threeDSecure(ctx workflow.Context) bool {
	return s.getVersion(ctx, ChangeThreeDSecure, workflow.DefaultVersion, 1) >= 1
}

// authenticate waits, up to timeout, for the webhook that ends the 3-D
// Secure of the PaymentIntent piID, and leaves s.charge at charged or
// declined. No webhook by the deadline, or a cancel signal, cancels the
// PaymentIntent ([saga.cancelPayment]). A Temporal cancel returns its error
// with s.awaitingAuth set, so the compensation cancels the PaymentIntent
// before it decides about a refund.
func (s *saga) authenticate(ctx workflow.Context, piID string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = activities.DefaultAuthenticationTimeout
	}
	logger := workflow.GetLogger(ctx)
	logger.Info("the charge requires the customer's authentication (3-D Secure): waiting for its webhook",
		"order_id", s.order.OrderID, "payment_intent_id", piID, "deadline", timeout)
	s.awaitingAuth = piID
	outcome, w, err := s.awaitWebhook(ctx, piID, timeout, StageAwaitingAuthentication)
	switch {
	case err != nil:
		return err
	case outcome == webhookSucceeded:
		logger.Info("the customer authenticated: the charge succeeded (webhook)", "order_id", s.order.OrderID,
			"payment_intent_id", piID, "stripe_event_id", w.StripeEventID)
		s.awaitingAuth = ""
		s.charged(piID)
		return nil
	case outcome == webhookFailed:
		logger.Info("the customer's authentication failed (webhook)", "order_id", s.order.OrderID,
			"payment_intent_id", piID, "stripe_event_id", w.StripeEventID, "failure_code", w.FailureCode)
		s.awaitingAuth = ""
		s.status.LastError = "3-D Secure authentication failed: " + w.FailureCode
		s.charge = declined
		return nil
	}
	return s.cancelPayment(ctx, piID)
}

// cancelPayment cancels the PaymentIntent piID, which waits for an
// authentication that did not come. A cancel that finds it succeeded (the
// customer finished just before) is the payment made: the saga goes on as
// charged. Otherwise nothing was, nor can be, charged: declined, with
// [ReasonAuthenticationNotCompleted].
func (s *saga) cancelPayment(ctx workflow.Context, piID string) error {
	var res activities.CancelPaymentResult
	if err := workflow.ExecuteActivity(s.settled(cancelPaymentOptions(ctx)), a.CancelPayment, activities.CancelPaymentInput{
		EventID: s.in.EventID, OrderID: s.order.OrderID, PaymentIntentID: piID,
	}).Get(ctx, &res); err != nil {
		s.status.LastError = err.Error()
		return err
	}
	s.awaitingAuth = ""
	logger := workflow.GetLogger(ctx)
	if res.Succeeded() {
		logger.Info("the cancel found the payment succeeded: the customer authenticated just in time",
			"order_id", s.order.OrderID, "payment_intent_id", piID)
		s.charged(piID)
		return nil
	}
	logger.Info("3-D Secure not completed in time: the PaymentIntent is canceled, nothing was charged",
		"order_id", s.order.OrderID, "payment_intent_id", piID)
	s.status.LastError = "the customer did not complete 3-D Secure in time; payment intent " + piID + " canceled"
	s.reason = ReasonAuthenticationNotCompleted
	s.charge = declined
	return nil
}
