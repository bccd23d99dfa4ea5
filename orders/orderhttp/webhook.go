package orderhttp

import (
	"errors"
	"io"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/failpoints"
)

// webhookMaxBodyBytes is the limit of a webhook's body: Stripe's events are
// a few KiB.
const webhookMaxBodyBytes = 256 << 10

const (
	codeWebhooksOff      = "webhooks_not_configured"
	codeInvalidSignature = "invalid_signature"
	codeInvalidEvent     = "invalid_event"
)

// stripeWebhook is POST /webhooks/stripe: it verifies the Stripe-Signature
// header with the endpoint's secret (Stripe's scheme: HMAC-SHA256 of
// "timestamp.body", the timestamp at most 5 minutes old), then records the
// event (its inbox row and, for an order of this service, its outbox event)
// in one transaction and answers 200 only after the commit. A bad signature
// or a stale timestamp is a 400 and writes nothing; the same event again is
// a 200 that writes nothing (Stripe delivers at least once and retries for
// days); a database error is a 500, which Stripe retries.
func (s *server) stripeWebhook(w http.ResponseWriter, r *http.Request) {
	if s.cfg.StripeWebhookSecret == "" {
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, Code: codeWebhooksOff,
			Message: "this order API has no STRIPE_WEBHOOK_SECRET: it cannot verify webhooks, so it takes none (Stripe retries)"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, webhookMaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, &apiError{Status: http.StatusRequestEntityTooLarge, Code: codeBodyTooLarge,
			Message: "a webhook's body is limited to 256 KiB"})
		return
	case err != nil:
		writeError(w, &apiError{Status: http.StatusBadRequest, Code: codeInvalidEvent, Message: "the body could not be read: " + err.Error()})
		return
	}
	ev, err := webhook.ConstructEventWithOptions(body, r.Header.Get("Stripe-Signature"), s.cfg.StripeWebhookSecret,
		webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
	if err != nil {
		msg := "the Stripe-Signature header does not verify this body with the endpoint's secret: " + err.Error()
		if errors.Is(err, webhook.ErrTooOld) {
			msg = "the Stripe-Signature timestamp is more than 5 minutes old (a replayed or delayed request)"
		}
		writeError(w, &apiError{Status: http.StatusBadRequest, Code: codeInvalidSignature, Message: msg})
		return
	}
	if ev.ID == "" || ev.Type == "" || ev.Data == nil {
		writeError(w, &apiError{Status: http.StatusBadRequest, Code: codeInvalidEvent,
			Message: "a Stripe event has an id, a type and data.object"})
		return
	}
	var res orders.WebhookResult
	err = pgx.BeginFunc(r.Context(), s.cfg.DB, func(tx pgx.Tx) error {
		var err error
		res, err = orders.RecordWebhookTx(r.Context(), tx, s.cfg.Inbox, orders.Webhook{
			StripeEventID: ev.ID, Type: string(ev.Type), Created: ev.Created, Object: ev.Data.Raw,
		}, orders.WithEnqueuer(s.cfg.Enqueuer))
		return err
	})
	if err != nil {
		s.writeCommandError(w, r, err)
		return
	}
	if !res.Duplicate {
		if err := s.cfg.Failpoints.Inject(r.Context(), failpoints.WebhookAfterCommit); err != nil {
			s.writeCommandError(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Received  bool   `json:"received"`
		Duplicate bool   `json:"duplicate"`
		Unmatched bool   `json:"unmatched,omitempty"`
		EventID   string `json:"event_id,omitempty"`
	}{Received: true, Duplicate: res.Duplicate, Unmatched: res.Unmatched, EventID: eventIDString(res)})
}

func eventIDString(res orders.WebhookResult) string {
	if res.Duplicate || res.Unmatched {
		return ""
	}
	return res.EventID.String()
}
