package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/outbox/failpoints"
)

// EmailKind is the kind of a transactional email; it is a Resend tag and part
// of the idempotency key (one email of each kind per event).
type EmailKind string

// Email kinds, fixed in docs/reference.md.
const (
	EmailConfirmation  EmailKind = "confirmation"
	EmailPaymentFailed EmailKind = "payment_failed"
	EmailCancellation  EmailKind = "cancellation"
	// EmailStockUnavailable: the order failed before any charge because its
	// items could not be reserved.
	EmailStockUnavailable EmailKind = "stock_unavailable"
)

// Email tag names, fixed in docs/reference.md.
const (
	TagOrderID = "order_id"
	TagKind    = "kind"
)

// SendEmailInput is one transactional email.
type SendEmailInput struct {
	// EventID is the event the email reports on; the key derives from it.
	EventID  string    `json:"event_id"`
	OrderID  string    `json:"order_id"`
	Kind     EmailKind `json:"kind"`
	To       string    `json:"to"`
	Amount   int64     `json:"amount,omitempty"`
	Currency string    `json:"currency,omitempty"`
	// Refunded says the cancellation email also reports a refund.
	Refunded bool `json:"refunded,omitempty"`
	// ShippingAddress, when set, is printed in the confirmation email. Nil
	// for an order without one, and for every email scheduled by a workflow
	// before the field existed: their recorded input renders as before, so a
	// retry sends the very payload the provider already holds under the key.
	ShippingAddress *ShippingAddress `json:"shipping_address,omitempty"`
}

// ShippingAddress is the address printed in a confirmation email; the same
// fields as the order's (orders.ShippingAddress), owned here because the
// activity's input is a contract recorded in workflow histories.
type ShippingAddress struct {
	Name       string `json:"name"`
	Line1      string `json:"line1"`
	Line2      string `json:"line2,omitempty"`
	City       string `json:"city"`
	PostalCode string `json:"postal_code"`
	Country    string `json:"country"`
}

// lines renders the address as a label: one field a line, line2 only when set.
func (a *ShippingAddress) lines() string {
	parts := []string{a.Name, a.Line1}
	if a.Line2 != "" {
		parts = append(parts, a.Line2)
	}
	parts = append(parts, a.PostalCode+" "+a.City, a.Country)
	return strings.Join(parts, "\n")
}

// SendEmailResult says what SendEmail did.
type SendEmailResult struct {
	// EmailID is the email provider's id of the sent email; "" for a
	// Duplicate, whose id was not kept.
	EmailID string `json:"email_id"`
	// Duplicate: the inbox showed this email as sent already (by an earlier
	// attempt or run); the provider was not called.
	Duplicate bool `json:"duplicate,omitempty"`
}

// EmailConsumerName is the inbox consumer of the emails of one kind: with
// the event id, it names one email, as [EmailKey] does at the provider.
func EmailConsumerName(kind EmailKind) string { return "email." + string(kind) }

// SendEmail sends the email under [EmailKey], once. Its body is a pure
// function of the input, so a retry sends the same payload and the provider
// replays the first send instead of rejecting the key.
//
// The provider forgets keys after 24 hours, so a run started again days
// later (an operator's replay) would mail the customer a second time. Our
// own inbox remembers as long as the event is retained: the inbox's pattern
// for an effect outside the database ([inbox.Inbox.Seen], then the send,
// then [inbox.Inbox.Record] under consumer [EmailConsumerName] once the
// provider accepted the email), so a call that finds the row sends nothing
// and returns Duplicate. Between the send and that row a crash leaves only
// the provider's key to deduplicate the retry, as before.
func (a *Activities) SendEmail(ctx context.Context, in SendEmailInput) (SendEmailResult, error) {
	if a.DB == nil {
		return SendEmailResult{}, errors.New("activities: no database configured for SendEmail's inbox (set DATABASE_URL)")
	}
	if a.Email == nil {
		return SendEmailResult{}, errors.New("activities: no email client configured (set EMAIL_API_BASE)")
	}
	key := EmailKey(in.EventID, in.Kind)
	consumer := EmailConsumerName(in.Kind)
	eventID, err := uuid.Parse(in.EventID)
	if err != nil {
		return SendEmailResult{}, fmt.Errorf("email %s: not an event id: %w", key, err)
	}
	sent, err := a.inbox().Seen(ctx, a.DB, consumer, eventID)
	if err != nil {
		return SendEmailResult{}, fmt.Errorf("email %s: %w", key, err)
	}
	if sent { // counted by the inbox
		logger(ctx).Info("inbox duplicate acknowledged without effect: the email was sent already",
			"consumer", consumer, "event_id", in.EventID, "order_id", in.OrderID)
		return SendEmailResult{Duplicate: true}, nil
	}
	id, err := a.Email.Send(ctx, composeEmail(a.Email.From, in), key)
	if err != nil {
		var apiErr *EmailAPIError
		if errors.As(err, &apiErr) && !apiErr.Retryable() {
			return SendEmailResult{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("email %s for order %s rejected: %v", key, in.OrderID, err), ErrTypeEmailRejected, err)
		}
		return SendEmailResult{}, fmt.Errorf("email %s: %w (retrying under the same key)", key, err)
	}
	// Not first when a concurrent attempt, which sent under the same key
	// (so one email), recorded it meanwhile: nothing to do either way.
	if _, err := a.inbox().Record(ctx, a.DB, consumer, eventID); err != nil {
		// Retried: the provider replays the send under the key (within its
		// 24 hours), and the retry writes the row.
		return SendEmailResult{}, fmt.Errorf("email %s: sent, but recording it in the inbox failed: %w", key, err)
	}
	if err := a.failpoint(ctx, failpoints.ActivityEmailAfterProvider); err != nil {
		return SendEmailResult{}, err
	}
	return SendEmailResult{EmailID: id}, nil
}

// composeEmail renders the message. No clock, no randomness: see SendEmail.
func composeEmail(from string, in SendEmailInput) Email {
	if from == "" {
		from = DefaultEmailFrom
	}
	m := Email{
		From: from,
		To:   []string{in.To},
		Tags: []EmailTag{{Name: TagOrderID, Value: in.OrderID}, {Name: TagKind, Value: string(in.Kind)}},
	}
	amount := fmt.Sprintf("%d %s (minor units)", in.Amount, in.Currency)
	switch in.Kind {
	case EmailConfirmation:
		m.Subject = "Your order " + in.OrderID + " is confirmed"
		m.Text = "We received your payment of " + amount + ". Your order " + in.OrderID + " is confirmed."
		if in.ShippingAddress != nil {
			m.Text += "\n\nIt will ship to:\n" + in.ShippingAddress.lines()
		}
	case EmailPaymentFailed:
		m.Subject = "Payment for order " + in.OrderID + " failed"
		m.Text = "Your payment method was declined; you have not been charged for order " + in.OrderID + "."
	case EmailStockUnavailable:
		m.Subject = "Order " + in.OrderID + " could not be completed"
		m.Text = "The items of order " + in.OrderID + " could not be reserved; you have not been charged."
	case EmailCancellation:
		m.Subject = "Your order " + in.OrderID + " is cancelled"
		m.Text = "Your order " + in.OrderID + " is cancelled."
		if in.Refunded {
			m.Text += " The payment of " + amount + " has been refunded."
		} else {
			m.Text += " You have not been charged."
		}
	default:
		m.Subject = "Order " + in.OrderID
		m.Text = "An update on your order " + in.OrderID + "."
	}
	return m
}
