package providersim

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// PaymentIntent statuses the simulator produces.
const (
	statusSucceeded             = "succeeded"
	statusRequiresPaymentMethod = "requires_payment_method"
	statusRequiresConfirmation  = "requires_confirmation"
)

// testCard is what one of Stripe's test payment methods stands for.
type testCard struct {
	brand, last4, funding, country string
	// declineCode is set for cards that are always declined.
	declineCode string
}

// testPaymentMethods are the test-mode tokens the simulator knows, with the
// outcome Stripe documents for each (https://docs.stripe.com/testing).
// Stripe turns each token into a fresh pm_ object when it is used.
var testPaymentMethods = map[string]testCard{
	"pm_card_visa":                            {brand: "visa", last4: "4242", funding: "credit", country: "US"},
	"pm_card_mastercard":                      {brand: "mastercard", last4: "4444", funding: "credit", country: "US"},
	"pm_card_chargeDeclined":                  {brand: "visa", last4: "0002", funding: "credit", country: "US", declineCode: "generic_decline"},
	"pm_card_chargeDeclinedInsufficientFunds": {brand: "visa", last4: "9995", funding: "credit", country: "US", declineCode: "insufficient_funds"},
}

// declineMessages are Stripe's customer-facing messages per decline code.
var declineMessages = map[string]string{
	"generic_decline":    "Your card was declined.",
	"insufficient_funds": "Your card has insufficient funds.",
}

// minimumAmounts are Stripe's minimum charge amounts (smallest currency
// unit) for the currencies the simulator accepts.
var minimumAmounts = map[string]int64{
	"usd": 50, "eur": 50, "gbp": 30, "cad": 50, "aud": 50, "chf": 50, "jpy": 50,
	"sek": 300, "nok": 300, "dkk": 250, "nzd": 50, "sgd": 50, "hkd": 400, "mxn": 1000, "pln": 200,
}

// maxAmount is Stripe's largest charge amount (eight digits).
const maxAmount = 99999999

// paymentIntent is the simulator's record of a PaymentIntent.
type paymentIntent struct {
	pos            position
	id             string
	clientSecret   string
	amount         int64
	amountReceived int64
	currency       string
	status         string
	metadata       map[string]string
	idempotencyKey string

	description, receiptEmail, customer         string
	statementDescriptor, statementDescriptorSfx string
	paymentMethod                               string // attached pm_ id; empty after a decline, as at Stripe
	paymentMethodTypes                          []string
	automaticPaymentMethods                     *automaticPaymentMethodsJSON
	latestCharge                                string
	lastPaymentError                            *stripeError
}

// paymentMethod is a pm_ object made from a test token.
type paymentMethod struct {
	id      string
	card    testCard
	created int64
}

// charge is the charge a confirmation made; refunds draw on it.
type charge struct {
	id             string
	created        int64
	amount         int64
	amountRefunded int64
	currency       string
	status         string // succeeded or failed
	paymentIntent  string
	paymentMethod  *paymentMethod
	declineCode    string
}

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
			p.currency, strings.Join(sortedKeys(minimumAmounts), ", ")))
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

// serveStripeCreate is the path every Stripe create endpoint shares: read
// the form, validate it (a rejected request stores no key), then run the
// create through the idempotency and fault pipeline of serveCall.
func serveStripeCreate[P any](s *Simulator, w http.ResponseWriter, r *http.Request, operation, endpoint string,
	parse func(url.Values) (P, *stripeError),
	execute func(st *store, now time.Time, f fault, p P, key string) response,
) {
	form, ok := s.stripePostForm(w, r)
	if !ok {
		return
	}
	p, perr := parse(form)
	if perr != nil {
		s.writeStripe(w, r, perr.response())
		return
	}
	key := r.Header.Get("Idempotency-Key")
	s.serveCall(w, r, call{
		operation:   operation,
		proto:       stripeProtocol{s},
		scope:       idemScope{api: "stripe", apiKey: apiKeyFrom(r), key: key},
		endpoint:    endpoint,
		fingerprint: fingerprint(form),
		execute: func(st *store, now time.Time, f fault) response {
			return execute(st, now, f, p, key)
		},
	})
}

// stripePostForm reads a form-encoded body and its Idempotency-Key, and
// rejects keys longer than Stripe's 255 characters.
func (s *Simulator) stripePostForm(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		s.writeStripe(w, r, invalidRequest("", "", "Invalid request body: "+err.Error()).response())
		return nil, false
	}
	if len(r.Header.Get("Idempotency-Key")) > 255 {
		s.writeStripe(w, r, invalidRequest("", "", "Idempotency-Key must be at most 255 characters long.").response())
		return nil, false
	}
	return r.PostForm, true
}

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

	if ch.declineCode == "" {
		ch.status = statusSucceeded
		pi.status = statusSucceeded
		pi.amountReceived = pi.amount
		s.log.Info("providersim: payment intent succeeded", "id", pi.id, "amount", pi.amount, "currency", pi.currency, "idempotency_key", key)
		return stripeJSON(http.StatusOK, st.paymentIntentJSON(pi, p.expand))
	}

	// A decline leaves the PaymentIntent waiting for another payment method:
	// Stripe detaches the card and records the failure in
	// last_payment_error, and answers the create with a 402 card_error that
	// embeds the PaymentIntent.
	ch.status = "failed"
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
	e := *pi.lastPaymentError
	e.status = http.StatusPaymentRequired
	e.PaymentIntent = st.paymentIntentJSON(pi, nil)
	return e.response()
}

// retrievePaymentIntent is GET /v1/payment_intents/{id}.
func (s *Simulator) retrievePaymentIntent(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := checkParams(q, "expand", "client_secret"); err != nil {
		s.writeStripe(w, r, err.response())
		return
	}
	expand, err := formExpand(q, "latest_charge")
	if err != nil {
		s.writeStripe(w, r, err.response())
		return
	}
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	pi, ok := s.st.paymentIntents[id]
	if !ok {
		s.writeStripe(w, r, resourceMissing("intent", fmt.Sprintf("No such payment_intent: '%s'", id)).response())
		return
	}
	s.writeStripe(w, r, stripeJSON(http.StatusOK, s.st.paymentIntentJSON(pi, expand)))
}

// listPaymentIntents is GET /v1/payment_intents: newest first, filtered by
// created and customer, paged with starting_after/ending_before. It is how
// reconciliation scans a time window once an idempotency key has expired.
func (s *Simulator) listPaymentIntents(w http.ResponseWriter, r *http.Request) {
	lq, err := parseListQuery(r.URL.Query(), "created", "customer", "limit", "starting_after", "ending_before", "expand")
	if err != nil {
		s.writeStripe(w, r, err.response())
		return
	}
	q, limit, created := lq.q, lq.limit, lq.created
	expand, err := formExpand(q, "data.latest_charge")
	if err != nil {
		s.writeStripe(w, r, err.response())
		return
	}
	customer := q.Get("customer")

	s.mu.Lock()
	defer s.mu.Unlock()
	after, before, err := s.st.piCursors(q)
	if err != nil {
		s.writeStripe(w, r, err.response())
		return
	}
	var matching []*paymentIntent
	for _, pi := range s.st.piOrder {
		if created.match(pi.pos.created) && (customer == "" || pi.customer == customer) {
			matching = append(matching, pi)
		}
	}
	items, hasMore := page(matching, func(pi *paymentIntent) position { return pi.pos }, limit, after, before)
	data := make([]*paymentIntentJSON, 0, len(items))
	for _, pi := range items {
		data = append(data, s.st.paymentIntentJSON(pi, trimExpand(expand)))
	}
	s.writeStripe(w, r, stripeJSON(http.StatusOK, listJSON{Object: "list", Data: data, HasMore: hasMore, URL: "/v1/payment_intents"}))
}

// piCursors resolves starting_after and ending_before to positions.
func (st *store) piCursors(q url.Values) (after, before *position, err *stripeError) {
	for name, dst := range map[string]**position{"starting_after": &after, "ending_before": &before} {
		id := q.Get(name)
		if id == "" {
			continue
		}
		pi, ok := st.paymentIntents[id]
		if !ok {
			return nil, nil, invalidRequest("resource_missing", name, fmt.Sprintf("No such payment_intent: '%s'", id))
		}
		p := pi.pos
		*dst = &p
	}
	return after, before, nil
}

// trimExpand turns a list's "data.x" expansions into the per-object "x".
func trimExpand(expand []string) []string {
	out := make([]string, 0, len(expand))
	for _, e := range expand {
		out = append(out, strings.TrimPrefix(e, "data."))
	}
	return out
}

// paymentIntentJSON is Stripe's payment_intent object, every field that
// stripe-go's PaymentIntent decodes present (null where Stripe sends null).
type paymentIntentJSON struct {
	ID                                string                       `json:"id"`
	Object                            string                       `json:"object"`
	Amount                            int64                        `json:"amount"`
	AmountCapturable                  int64                        `json:"amount_capturable"`
	AmountDetails                     map[string]any               `json:"amount_details"`
	AmountReceived                    int64                        `json:"amount_received"`
	Application                       *string                      `json:"application"`
	ApplicationFeeAmount              *int64                       `json:"application_fee_amount"`
	AutomaticPaymentMethods           *automaticPaymentMethodsJSON `json:"automatic_payment_methods"`
	CanceledAt                        *int64                       `json:"canceled_at"`
	CancellationReason                *string                      `json:"cancellation_reason"`
	CaptureMethod                     string                       `json:"capture_method"`
	ClientSecret                      string                       `json:"client_secret"`
	ConfirmationMethod                string                       `json:"confirmation_method"`
	Created                           int64                        `json:"created"`
	Currency                          string                       `json:"currency"`
	Customer                          *string                      `json:"customer"`
	Description                       *string                      `json:"description"`
	Invoice                           *string                      `json:"invoice"`
	LastPaymentError                  *stripeError                 `json:"last_payment_error"`
	LatestCharge                      any                          `json:"latest_charge"` // null, an id, or the charge when expanded
	Livemode                          bool                         `json:"livemode"`
	Metadata                          map[string]string            `json:"metadata"`
	NextAction                        any                          `json:"next_action"`
	OnBehalfOf                        *string                      `json:"on_behalf_of"`
	PaymentMethod                     *string                      `json:"payment_method"`
	PaymentMethodConfigurationDetails any                          `json:"payment_method_configuration_details"`
	PaymentMethodOptions              map[string]any               `json:"payment_method_options"`
	PaymentMethodTypes                []string                     `json:"payment_method_types"`
	Processing                        any                          `json:"processing"`
	ReceiptEmail                      *string                      `json:"receipt_email"`
	Review                            *string                      `json:"review"`
	SetupFutureUsage                  *string                      `json:"setup_future_usage"`
	Shipping                          any                          `json:"shipping"`
	Source                            *string                      `json:"source"`
	StatementDescriptor               *string                      `json:"statement_descriptor"`
	StatementDescriptorSuffix         *string                      `json:"statement_descriptor_suffix"`
	Status                            string                       `json:"status"`
	TransferData                      any                          `json:"transfer_data"`
	TransferGroup                     *string                      `json:"transfer_group"`
}

type automaticPaymentMethodsJSON struct {
	AllowRedirects string `json:"allow_redirects,omitempty"`
	Enabled        bool   `json:"enabled"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (st *store) paymentIntentJSON(pi *paymentIntent, expand []string) *paymentIntentJSON {
	out := &paymentIntentJSON{
		ID:                        pi.id,
		Object:                    "payment_intent",
		Amount:                    pi.amount,
		AmountDetails:             map[string]any{"tip": map[string]any{}},
		AmountReceived:            pi.amountReceived,
		AutomaticPaymentMethods:   pi.automaticPaymentMethods,
		CaptureMethod:             "automatic",
		ClientSecret:              pi.clientSecret,
		ConfirmationMethod:        "automatic",
		Created:                   pi.pos.created,
		Currency:                  pi.currency,
		Customer:                  nullable(pi.customer),
		Description:               nullable(pi.description),
		LastPaymentError:          pi.lastPaymentError,
		Metadata:                  copyMap(pi.metadata),
		PaymentMethod:             nullable(pi.paymentMethod),
		PaymentMethodOptions:      map[string]any{"card": map[string]any{"installments": nil, "mandate_options": nil, "network": nil, "request_three_d_secure": "automatic"}},
		PaymentMethodTypes:        pi.paymentMethodTypes,
		ReceiptEmail:              nullable(pi.receiptEmail),
		StatementDescriptor:       nullable(pi.statementDescriptor),
		StatementDescriptorSuffix: nullable(pi.statementDescriptorSfx),
		Status:                    pi.status,
	}
	if pi.latestCharge != "" {
		out.LatestCharge = pi.latestCharge
		if slices.Contains(expand, "latest_charge") {
			out.LatestCharge = st.chargeJSON(st.charges[pi.latestCharge])
		}
	}
	return out
}

// paymentMethodJSON is Stripe's payment_method object for a test card.
type paymentMethodJSON struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	BillingDetails map[string]any    `json:"billing_details"`
	Card           cardJSON          `json:"card"`
	Created        int64             `json:"created"`
	Customer       *string           `json:"customer"`
	Livemode       bool              `json:"livemode"`
	Metadata       map[string]string `json:"metadata"`
	Type           string            `json:"type"`
}

type cardJSON struct {
	Brand    string `json:"brand"`
	Country  string `json:"country"`
	ExpMonth int    `json:"exp_month"`
	ExpYear  int    `json:"exp_year"`
	Funding  string `json:"funding"`
	Last4    string `json:"last4"`
}

func (pm *paymentMethod) cardJSON() cardJSON {
	return cardJSON{
		Brand: pm.card.brand, Country: pm.card.country, Funding: pm.card.funding, Last4: pm.card.last4,
		ExpMonth: 12, ExpYear: time.Unix(pm.created, 0).UTC().Year() + 3,
	}
}

func (pm *paymentMethod) json() *paymentMethodJSON {
	return &paymentMethodJSON{
		ID:             pm.id,
		Object:         "payment_method",
		BillingDetails: emptyBillingDetails(),
		Card:           pm.cardJSON(),
		Created:        pm.created,
		Metadata:       map[string]string{},
		Type:           "card",
	}
}

// emptyBillingDetails is billing_details of a test card: nothing collected.
func emptyBillingDetails() map[string]any {
	return map[string]any{
		"address": map[string]any{"city": nil, "country": nil, "line1": nil, "line2": nil, "postal_code": nil, "state": nil},
		"email":   nil, "name": nil, "phone": nil,
	}
}

// chargeJSON is Stripe's charge object, sent when latest_charge is expanded.
type chargeJSON struct {
	ID                   string            `json:"id"`
	Object               string            `json:"object"`
	Amount               int64             `json:"amount"`
	AmountCaptured       int64             `json:"amount_captured"`
	AmountRefunded       int64             `json:"amount_refunded"`
	BillingDetails       map[string]any    `json:"billing_details"`
	Captured             bool              `json:"captured"`
	Created              int64             `json:"created"`
	Currency             string            `json:"currency"`
	Disputed             bool              `json:"disputed"`
	FailureCode          *string           `json:"failure_code"`
	FailureMessage       *string           `json:"failure_message"`
	Livemode             bool              `json:"livemode"`
	Metadata             map[string]string `json:"metadata"`
	Outcome              map[string]any    `json:"outcome"`
	Paid                 bool              `json:"paid"`
	PaymentIntent        string            `json:"payment_intent"`
	PaymentMethod        string            `json:"payment_method"`
	PaymentMethodDetails map[string]any    `json:"payment_method_details"`
	Refunded             bool              `json:"refunded"`
	Status               string            `json:"status"`
}

func (st *store) chargeJSON(ch *charge) *chargeJSON {
	out := &chargeJSON{
		ID:                   ch.id,
		Object:               "charge",
		Amount:               ch.amount,
		AmountRefunded:       ch.amountRefunded,
		BillingDetails:       emptyBillingDetails(),
		Created:              ch.created,
		Currency:             ch.currency,
		Metadata:             map[string]string{},
		PaymentIntent:        ch.paymentIntent,
		PaymentMethod:        ch.paymentMethod.id,
		PaymentMethodDetails: map[string]any{"type": "card", "card": ch.paymentMethod.cardJSON()},
		Refunded:             ch.amount > 0 && ch.amountRefunded == ch.amount,
		Status:               ch.status,
	}
	if ch.status == statusSucceeded {
		out.AmountCaptured = ch.amount
		out.Captured = true
		out.Paid = true
		out.Outcome = map[string]any{
			"network_status": "approved_by_network", "reason": nil, "risk_level": "normal",
			"seller_message": "Payment complete.", "type": "authorized",
		}
	} else {
		out.FailureCode = nullable("card_declined")
		out.FailureMessage = nullable(declineMessages[ch.declineCode])
		out.Outcome = map[string]any{
			"network_status": "declined_by_network", "reason": ch.declineCode, "risk_level": "normal",
			"seller_message": "The bank did not return any further details with this decline.", "type": "issuer_declined",
		}
	}
	return out
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
