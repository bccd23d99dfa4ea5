package providersim

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/stripe/stripe-go/v76/webhook"
)

// Stripe webhooks: every change the simulator makes to a PaymentIntent, a
// refund or a dispute becomes a Stripe event, which is delivered to the
// configured endpoint (Options.WebhookURL) as Stripe delivers it: a POST of
// the event's JSON, signed in the Stripe-Signature header
// (t=UNIX,v1=HEX(HMAC-SHA256(secret, "t.body"))), signed again at every
// attempt, retried with a doubling backoff on anything but a 2xx, at least
// once. Tests ask for the rest of Stripe's delivery habits through the
// /_sim/webhooks hooks: a delivery again (a duplicate), and holding
// deliveries to release them newest first (out of order).

// Webhook event types the simulator produces.
const (
	EventPaymentIntentSucceeded      = "payment_intent.succeeded"
	EventPaymentIntentPaymentFailed  = "payment_intent.payment_failed"
	EventPaymentIntentProcessing     = "payment_intent.processing"
	EventPaymentIntentRequiresAction = "payment_intent.requires_action"
	EventPaymentIntentCanceled       = "payment_intent.canceled"
	EventChargeRefundUpdated         = "charge.refund.updated"
	EventChargeDisputeCreated        = "charge.dispute.created"
)

// Webhook delivery defaults (see Options).
const (
	// WebhookRetryDefault is the delay before a failed delivery's first
	// retry; each later retry waits twice as long, up to WebhookRetryMaxDefault.
	WebhookRetryDefault    = time.Second
	WebhookRetryMaxDefault = time.Hour
	// WebhookAttemptsDefault is how many times a delivery is tried before
	// the simulator gives up on it (Stripe tries for three days).
	WebhookAttemptsDefault = 20
	// webhookTimeout is how long one attempt waits for the endpoint's answer.
	webhookTimeout = 10 * time.Second
)

// webhookDelivery is one delivery of one event: a duplicate is a second
// delivery of the same event (same id, same body).
type webhookDelivery struct {
	eventID   string
	eventType string
	objectID  string
	created   int64
	body      []byte

	attempts   int
	nextAt     time.Time // real time
	inFlight   bool
	delivered  bool
	gaveUp     bool
	lastStatus int
	lastError  string
}

// eventJSON is Stripe's event object.
type eventJSON struct {
	ID         string `json:"id"`
	Object     string `json:"object"`
	APIVersion string `json:"api_version"`
	Created    int64  `json:"created"`
	Data       struct {
		Object any `json:"object"`
	} `json:"data"`
	Livemode        bool `json:"livemode"`
	PendingWebhooks int  `json:"pending_webhooks"`
	Request         struct {
		ID             *string `json:"id"`
		IdempotencyKey *string `json:"idempotency_key"`
	} `json:"request"`
	Type string `json:"type"`
}

// emit records the event typ about object (one of the simulator's *JSON
// objects) for delivery. It runs under the simulator's mutex, in the
// critical section of the change it reports, so an idempotent replay, which
// changes nothing, emits nothing. Without a webhook endpoint it does nothing.
func (s *Simulator) emit(st *store, now time.Time, typ, objectID string, object any) {
	if s.webhookURL == "" {
		return
	}
	ev := eventJSON{ID: newID("evt_"), Object: "event", APIVersion: objectAPIVersion, Created: now.Unix(), PendingWebhooks: 1, Type: typ}
	ev.Data.Object = object
	body, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		panic("providersim: encode event: " + err.Error()) // only the simulator's own types reach here
	}
	st.webhooks = append(st.webhooks, &webhookDelivery{eventID: ev.ID, eventType: typ, objectID: objectID,
		created: ev.Created, body: body, nextAt: time.Now()})
	s.log.Info("providersim: webhook event", "id", ev.ID, "type", typ, "object", objectID)
	s.kickWebhooks()
}

// kickWebhooks wakes the deliverer.
func (s *Simulator) kickWebhooks() {
	select {
	case s.webhookKick <- struct{}{}:
	default:
	}
}

// deliverWebhooks is the deliverer, one goroutine from New until Close: it
// sends every due delivery, one at a time, and sleeps until the next is due.
func (s *Simulator) deliverWebhooks() {
	defer close(s.webhooksDone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.closing
		cancel()
	}()
	for {
		due, wait := s.dueWebhooks(time.Now())
		for _, d := range due {
			s.attempt(ctx, d)
		}
		if len(due) > 0 {
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case <-s.closing:
			timer.Stop()
			return
		case <-s.webhookKick:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// dueWebhooks marks the deliveries due at now in flight and returns them,
// oldest due first, or the time until the next one is due.
func (s *Simulator) dueWebhooks(now time.Time) ([]*webhookDelivery, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wait := time.Hour
	if s.st.webhookHold {
		return nil, wait
	}
	var due []*webhookDelivery
	for _, d := range s.st.webhooks {
		switch {
		case d.delivered || d.gaveUp || d.inFlight:
		case !d.nextAt.After(now):
			d.inFlight = true
			due = append(due, d)
		default:
			wait = min(wait, d.nextAt.Sub(now))
		}
	}
	slices.SortStableFunc(due, func(a, b *webhookDelivery) int { return a.nextAt.Compare(b.nextAt) })
	return due, wait
}

// attempt sends d once, signed now, and records how it went.
func (s *Simulator) attempt(ctx context.Context, d *webhookDelivery) {
	status, err := s.post(ctx, d.body)
	s.mu.Lock()
	defer s.mu.Unlock()
	d.inFlight = false
	d.attempts++
	d.lastStatus = status
	d.lastError = ""
	if err == nil && status >= 200 && status < 300 {
		d.delivered = true
		s.log.Info("providersim: webhook delivered", "id", d.eventID, "type", d.eventType, "attempt", d.attempts, "status", status)
		return
	}
	if err != nil {
		d.lastError = err.Error()
	} else {
		d.lastError = "HTTP " + strconv.Itoa(status)
	}
	if d.attempts >= s.webhookAttempts {
		d.gaveUp = true
		s.log.Warn("providersim: webhook given up", "id", d.eventID, "type", d.eventType, "attempts", d.attempts, "error", d.lastError)
		return
	}
	backoff := s.webhookRetry << min(d.attempts-1, 30)
	if backoff <= 0 || backoff > s.webhookRetryMax {
		backoff = s.webhookRetryMax
	}
	d.nextAt = time.Now().Add(backoff)
	s.log.Info("providersim: webhook failed, retrying", "id", d.eventID, "type", d.eventType, "attempt", d.attempts, "error", d.lastError, "retry_in", backoff)
}

// post sends body to the endpoint with Stripe's headers, signed with the
// real time (the endpoint checks the timestamp against its own clock).
func (s *Simulator) post(ctx context.Context, body []byte) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.webhookURL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	t := time.Now()
	sig := hex.EncodeToString(webhook.ComputeSignature(t, body, s.webhookSecret))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	req.Header.Set("Stripe-Signature", fmt.Sprintf("t=%d,v1=%s", t.Unix(), sig))
	resp, err := s.webhookClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, nil
}

// WebhookDelivery is one delivery as GET /_sim/webhooks lists it.
type WebhookDelivery struct {
	EventID    string `json:"event_id"`
	Type       string `json:"type"`
	ObjectID   string `json:"object_id"`
	Created    int64  `json:"created"`
	Attempts   int    `json:"attempts"`
	Delivered  bool   `json:"delivered"`
	GaveUp     bool   `json:"gave_up"`
	LastStatus int    `json:"last_status,omitempty"`
	LastError  string `json:"last_error,omitempty"`
}

// Webhooks lists every delivery, in the order the events were made (a
// duplicate after its original's later events).
func (s *Simulator) Webhooks() []WebhookDelivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]WebhookDelivery, 0, len(s.st.webhooks))
	for _, d := range s.st.webhooks {
		out = append(out, WebhookDelivery{EventID: d.eventID, Type: d.eventType, ObjectID: d.objectID, Created: d.created,
			Attempts: d.attempts, Delivered: d.delivered, GaveUp: d.gaveUp, LastStatus: d.lastStatus, LastError: d.lastError})
	}
	return out
}

// ResendWebhook delivers the event eventID once more, as Stripe sometimes
// does (the same id and body). It reports whether the event exists.
func (s *Simulator) ResendWebhook(eventID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.st.webhooks, func(d *webhookDelivery) bool { return d.eventID == eventID })
	if i < 0 {
		return false
	}
	d := s.st.webhooks[i]
	s.st.webhooks = append(s.st.webhooks, &webhookDelivery{eventID: d.eventID, eventType: d.eventType, objectID: d.objectID,
		created: d.created, body: d.body, nextAt: time.Now()})
	s.kickWebhooks()
	return true
}

// HoldWebhooks stops deliveries until ReleaseWebhooks; events made meanwhile
// wait.
func (s *Simulator) HoldWebhooks() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.webhookHold = true
}

// ReleaseWebhooks resumes deliveries, the waiting ones newest first: the
// out-of-order delivery Stripe warns of, on demand.
func (s *Simulator) ReleaseWebhooks() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.webhookHold = false
	now := time.Now()
	n := 0
	for _, d := range slices.Backward(s.st.webhooks) {
		if !d.delivered && !d.gaveUp && !d.inFlight {
			d.nextAt = now.Add(time.Duration(n) * time.Microsecond)
			n++
		}
	}
	s.kickWebhooks()
}

// serveWebhooks is GET /_sim/webhooks.
func (s *Simulator) serveWebhooks(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"webhooks": s.Webhooks()})
}

// serveResendWebhook is POST /_sim/webhooks/{id}/resend.
func (s *Simulator) serveResendWebhook(w http.ResponseWriter, r *http.Request) {
	if !s.ResendWebhook(r.PathValue("id")) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such event: " + r.PathValue("id")})
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"resent": true})
}

// serveHoldWebhooks is POST /_sim/webhooks/hold and /_sim/webhooks/release.
func (s *Simulator) serveHoldWebhooks(hold bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if hold {
			s.HoldWebhooks()
		} else {
			s.ReleaseWebhooks()
		}
		writeJSON(w, http.StatusOK, map[string]bool{"held": hold})
	}
}
