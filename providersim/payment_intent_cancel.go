package providersim

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// cancellationReasons are the reasons a caller may give a cancel (Stripe's
// user-provided ones; failed_invoice, void_invoice and automatic are
// Stripe's own).
var cancellationReasons = []string{"duplicate", "fraudulent", "requested_by_customer", "abandoned"}

// cancelableStatuses are the statuses Stripe lets a PaymentIntent be
// canceled from (requires_capture too, which the simulator never produces:
// it captures on confirmation).
var cancelableStatuses = []string{statusRequiresPaymentMethod, "requires_capture", statusRequiresConfirmation, statusRequiresAction, statusProcessing}

// cancelPaymentIntentParams are the validated parameters of a cancel.
type cancelPaymentIntentParams struct {
	id     string
	reason string
	expand []string
}

// cancelPaymentIntent is POST /v1/payment_intents/{id}/cancel. It goes
// through the idempotency pipeline like a create: the first answer of a key,
// a 400 for a PaymentIntent that had already succeeded included, is replayed
// for the same request, and the key's endpoint is the path, so the key of
// one PaymentIntent's cancel sent for another is an idempotency error.
func (s *Simulator) cancelPaymentIntent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	serveStripeCreate(s, w, r, OperationPaymentIntentsCancel, "POST /v1/payment_intents/"+id+"/cancel",
		func(v url.Values) (cancelPaymentIntentParams, *stripeError) { return parseCancelPaymentIntent(id, v) },
		func(st *store, now time.Time, _ fault, p cancelPaymentIntentParams, key string) response {
			return s.executeCancelPaymentIntent(st, now, p, key)
		})
}

func parseCancelPaymentIntent(id string, v url.Values) (cancelPaymentIntentParams, *stripeError) {
	p := cancelPaymentIntentParams{id: id}
	if err := checkParams(v, "cancellation_reason", "expand"); err != nil {
		return p, err
	}
	var err *stripeError
	if p.expand, err = formExpand(v, "latest_charge"); err != nil {
		return p, err
	}
	if p.reason = v.Get("cancellation_reason"); p.reason != "" && !slices.Contains(cancellationReasons, p.reason) {
		return p, invalidRequest("", "cancellation_reason", fmt.Sprintf(
			"Invalid cancellation_reason: must be one of %s", strings.Join(cancellationReasons, ", ")))
	}
	return p, nil
}

// executeCancelPaymentIntent cancels the PaymentIntent if its status
// allows, and makes payment_intent.canceled. A processing payment's pending
// charge fails with it; a 3-D Secure one has no charge yet. A succeeded or
// canceled PaymentIntent is Stripe's 400 payment_intent_unexpected_state,
// which embeds the PaymentIntent as it is.
func (s *Simulator) executeCancelPaymentIntent(st *store, now time.Time, p cancelPaymentIntentParams, key string) response {
	pi, ok := st.paymentIntents[p.id]
	if !ok {
		return resourceMissing("intent", fmt.Sprintf("No such payment_intent: '%s'", p.id)).response()
	}
	if !slices.Contains(cancelableStatuses, pi.status) {
		e := invalidRequest("payment_intent_unexpected_state", "", fmt.Sprintf(
			"You cannot cancel this PaymentIntent because it has a status of %s. "+
				"Only a PaymentIntent with one of the following statuses may be canceled: %s.",
			pi.status, strings.Join(cancelableStatuses, ", ")))
		e.PaymentIntent = st.paymentIntentJSON(pi, nil)
		return e.response()
	}
	if ch, ok := st.charges[pi.latestCharge]; ok && ch.status == statusPending {
		ch.status = "failed"
	}
	pi.status = statusCanceled
	pi.canceledAt = now.Unix()
	pi.cancellationReason = p.reason
	s.log.Info("providersim: payment intent canceled", "id", pi.id, "reason", p.reason, "idempotency_key", key)
	s.emit(st, now, EventPaymentIntentCanceled, pi.id, st.paymentIntentJSON(pi, nil))
	return stripeJSON(http.StatusOK, st.paymentIntentJSON(pi, p.expand))
}
