package providersim

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// createPaymentIntentParams are the validated parameters of a create.
type createPaymentIntentParams struct {
	amount        int64
	currency      string
	paymentMethod string
	confirm       bool
	metadata      map[string]string
	expand        []string

	description, receiptEmail, customer         string
	statementDescriptor, statementDescriptorSfx string
	paymentMethodTypes                          []string
	automaticPaymentMethods                     *automaticPaymentMethodsJSON
}

// createPaymentIntentAllowed is every parameter POST /v1/payment_intents
// accepts here. The ones that do not change the simulated outcome
// (return_url, off_session, ...) are accepted so that production code needs
// no special case for the simulator.
var createPaymentIntentAllowed = []string{
	"amount", "currency", "payment_method", "confirm", "metadata", "description", "receipt_email", "customer",
	"expand", "payment_method_types", "automatic_payment_methods", "capture_method", "confirmation_method",
	"return_url", "off_session", "error_on_requires_action", "use_stripe_sdk",
	"statement_descriptor", "statement_descriptor_suffix",
}

// parseCreatePaymentIntent validates a create before anything runs: Stripe
// stores no idempotency key for a request it rejects, so every rejection
// happens here, before serveStripeCreate hands the request to serveCall.
func parseCreatePaymentIntent(v url.Values) (createPaymentIntentParams, *stripeError) {
	var p createPaymentIntentParams
	if err := checkParams(v, createPaymentIntentAllowed...); err != nil {
		return p, err
	}
	amount, present, err := formInt(v, "amount")
	switch {
	case err != nil:
		return p, err
	case !present:
		return p, invalidRequest("parameter_missing", "amount", "Missing required param: amount.")
	case amount < 1:
		return p, invalidRequest("parameter_invalid_integer", "amount", "This value must be greater than or equal to 1.")
	}
	p.amount = amount

	p.currency = strings.ToLower(v.Get("currency"))
	minimum, known := minimumAmounts[p.currency]
	switch {
	case p.currency == "":
		return p, invalidRequest("parameter_missing", "currency", "Missing required param: currency.")
	case !known:
		return p, invalidRequest("", "currency", fmt.Sprintf("Invalid currency: %s. The provider simulator supports: %s.",
			p.currency, strings.Join(slices.Sorted(maps.Keys(minimumAmounts)), ", ")))
	case amount < minimum:
		return p, invalidRequest("amount_too_small", "amount", fmt.Sprintf(
			"Amount must be at least %d %s (the smallest currency unit).", minimum, p.currency))
	case amount > maxAmount:
		return p, invalidRequest("amount_too_large", "amount", fmt.Sprintf(
			"Amount must be no more than %d %s (the smallest currency unit).", maxAmount, p.currency))
	}

	if p.confirm, err = formBool(v, "confirm"); err != nil {
		return p, err
	}
	p.paymentMethod = v.Get("payment_method")
	if p.paymentMethod != "" {
		if _, ok := testPaymentMethods[p.paymentMethod]; !ok {
			return p, invalidRequest("resource_missing", "payment_method", fmt.Sprintf("No such PaymentMethod: '%s'", p.paymentMethod))
		}
	}
	if p.confirm && p.paymentMethod == "" {
		return p, invalidRequest("payment_intent_unexpected_state", "payment_method",
			"You cannot confirm this PaymentIntent because it's missing a payment method. "+
				"To confirm the PaymentIntent, pass a payment_method.")
	}
	if cm := v.Get("capture_method"); cm != "" && cm != "automatic" && cm != "automatic_async" {
		return p, invalidRequest("", "capture_method",
			"The provider simulator supports only capture_method=automatic (outflow captures on confirmation).")
	}

	p.paymentMethodTypes = formList(v, "payment_method_types")
	for _, t := range p.paymentMethodTypes {
		if t != "card" {
			return p, invalidRequest("", "payment_method_types", fmt.Sprintf(
				"The payment method type %q is invalid. The provider simulator supports only card.", t))
		}
	}
	if e := v.Get("automatic_payment_methods[enabled]"); e != "" {
		enabled, err := formBool(v, "automatic_payment_methods[enabled]")
		if err != nil {
			return p, err
		}
		p.automaticPaymentMethods = &automaticPaymentMethodsJSON{Enabled: enabled, AllowRedirects: v.Get("automatic_payment_methods[allow_redirects]")}
		if p.automaticPaymentMethods.AllowRedirects == "" {
			p.automaticPaymentMethods.AllowRedirects = "always"
		}
	}
	if len(p.paymentMethodTypes) == 0 {
		p.paymentMethodTypes = []string{"card"}
	}

	if p.metadata, err = formMetadata(v); err != nil {
		return p, err
	}
	if p.expand, err = formExpand(v, "latest_charge"); err != nil {
		return p, err
	}
	p.description = v.Get("description")
	p.receiptEmail = v.Get("receipt_email")
	p.customer = v.Get("customer")
	p.statementDescriptor = v.Get("statement_descriptor")
	p.statementDescriptorSfx = v.Get("statement_descriptor_suffix")
	return p, nil
}

// createPaymentIntent is POST /v1/payment_intents.
func (s *Simulator) createPaymentIntent(w http.ResponseWriter, r *http.Request) {
	serveStripeCreate(s, w, r, OperationPaymentIntentsCreate, "POST /v1/payment_intents",
		parseCreatePaymentIntent, s.executeCreatePaymentIntent)
}

// executeCreatePaymentIntent creates the PaymentIntent and, when confirm is
// set, its charge. It runs under the simulator's mutex (serveCall), and its
// answer, a decline's 402 included, is what the idempotency key then
// replays. A decline fault declines a card that would otherwise succeed.
func (s *Simulator) executeCreatePaymentIntent(st *store, now time.Time, f fault, p createPaymentIntentParams, key string) response {
	pi := &paymentIntent{
		pos:                     position{created: now.Unix(), seq: st.nextSeq()},
		id:                      newID("pi_"),
		amount:                  p.amount,
		currency:                p.currency,
		metadata:                p.metadata,
		idempotencyKey:          key,
		description:             p.description,
		receiptEmail:            p.receiptEmail,
		customer:                p.customer,
		statementDescriptor:     p.statementDescriptor,
		statementDescriptorSfx:  p.statementDescriptorSfx,
		paymentMethodTypes:      p.paymentMethodTypes,
		automaticPaymentMethods: p.automaticPaymentMethods,
		status:                  statusRequiresPaymentMethod,
	}
	pi.clientSecret = pi.id + "_secret_" + newID("")
	st.paymentIntents[pi.id] = pi
	st.piOrder = append(st.piOrder, pi)

	if p.paymentMethod == "" {
		return stripeJSON(http.StatusOK, st.paymentIntentJSON(pi, p.expand))
	}
	pm := &paymentMethod{id: newID("pm_"), card: testPaymentMethods[p.paymentMethod], created: now.Unix()}
	st.paymentMethods[pm.id] = pm
	pi.paymentMethod = pm.id
	if !p.confirm {
		pi.status = statusRequiresConfirmation
		return stripeJSON(http.StatusOK, st.paymentIntentJSON(pi, p.expand))
	}

	ch := &charge{
		id:            newID("ch_"),
		created:       now.Unix(),
		amount:        pi.amount,
		currency:      pi.currency,
		paymentIntent: pi.id,
		paymentMethod: pm,
		declineCode:   pm.card.declineCode,
	}
	if f.kind == faultDecline && ch.declineCode == "" {
		ch.declineCode = "generic_decline"
	}
	st.charges[ch.id] = ch
	pi.latestCharge = ch.id

	switch {
	case ch.declineCode != "":
	case pm.card.flow == flowAuthentication:
		// No charge until the customer authenticates (authenticate).
		delete(st.charges, ch.id)
		pi.latestCharge = ""
		pi.status = statusRequiresAction
		s.log.Info("providersim: payment intent requires action", "id", pi.id, "idempotency_key", key)
		s.emit(st, now, EventPaymentIntentRequiresAction, pi.id, st.paymentIntentJSON(pi, nil))
		return stripeJSON(http.StatusOK, st.paymentIntentJSON(pi, p.expand))
	case pm.card.flow == flowProcessing:
		ch.status = statusPending
		pi.status = statusProcessing
		s.log.Info("providersim: payment intent processing", "id", pi.id, "idempotency_key", key)
		s.emit(st, now, EventPaymentIntentProcessing, pi.id, st.paymentIntentJSON(pi, nil))
		return stripeJSON(http.StatusOK, st.paymentIntentJSON(pi, p.expand))
	default:
		s.succeed(st, now, pi, ch, key)
		return stripeJSON(http.StatusOK, st.paymentIntentJSON(pi, p.expand))
	}

	// A decline leaves the PaymentIntent waiting for another payment method:
	// Stripe detaches the card and records the failure in
	// last_payment_error, and answers the create with a 402 card_error that
	// embeds the PaymentIntent.
	s.decline(st, now, pi, ch, key)
	e := *pi.lastPaymentError
	e.status = http.StatusPaymentRequired
	e.PaymentIntent = st.paymentIntentJSON(pi, nil)
	return e.response()
}

// succeed settles pi with its charge ch, and makes the event.
func (s *Simulator) succeed(st *store, now time.Time, pi *paymentIntent, ch *charge, key string) {
	ch.status = statusSucceeded
	pi.status = statusSucceeded
	pi.amountReceived = pi.amount
	s.log.Info("providersim: payment intent succeeded", "id", pi.id, "amount", pi.amount, "currency", pi.currency, "idempotency_key", key)
	s.emit(st, now, EventPaymentIntentSucceeded, pi.id, st.paymentIntentJSON(pi, nil))
}

// decline fails ch, whose declineCode is set, and leaves pi waiting for
// another payment method: Stripe detaches the card and records the failure
// in last_payment_error. It makes the event.
func (s *Simulator) decline(st *store, now time.Time, pi *paymentIntent, ch *charge, key string) {
	ch.status = "failed"
	pm := ch.paymentMethod
	pi.status = statusRequiresPaymentMethod
	pi.paymentMethod = ""
	pi.lastPaymentError = &stripeError{
		Type:          errorTypeCard,
		Code:          "card_declined",
		DeclineCode:   ch.declineCode,
		Charge:        ch.id,
		Message:       declineMessages[ch.declineCode],
		DocURL:        "https://stripe.com/docs/error-codes/card-declined",
		PaymentMethod: pm.json(),
	}
	s.log.Info("providersim: payment intent declined", "id", pi.id, "decline_code", ch.declineCode, "idempotency_key", key)
	s.emit(st, now, EventPaymentIntentPaymentFailed, pi.id, st.paymentIntentJSON(pi, nil))
}
