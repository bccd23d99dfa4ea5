package orders

import (
	"fmt"
	"net/mail"
	"strings"
)

// Limits of a create-order request.
const (
	// MaxItems is the most lines an order may have.
	MaxItems = 100
	// MaxSKULength is the longest SKU accepted, in bytes.
	MaxSKULength = 64
	// MaxEmailLength is the longest e-mail address accepted (RFC 5321's
	// practical limit for a forward path).
	MaxEmailLength = 254
	// MaxPaymentMethodLength is the longest payment method ID accepted.
	MaxPaymentMethodLength = 255
)

// CreateOrderParams is what a customer asks for. The server computes the
// amount itself; a client cannot send one.
type CreateOrderParams struct {
	CustomerEmail string `json:"customer_email"`
	// Currency is an ISO 4217 code, lower case like Stripe (upper case is
	// accepted and normalized).
	Currency string `json:"currency"`
	// PaymentMethod is a Stripe payment method ID, e.g. "pm_card_visa".
	PaymentMethod string `json:"payment_method"`
	Items         []Item `json:"items"`
	// ShippingAddress is optional. An order with one is announced with
	// OrderCreated schema version 2, one without with version 1, so clients
	// and workers that predate addresses see nothing new.
	ShippingAddress *ShippingAddress `json:"shipping_address,omitempty"`
}

// Validate checks every field and computes the order total in minor units.
// It returns the normalized parameters (currency in lower case, shipping
// country in upper case) or a
// *ValidationError naming the first offending field. It is pure: nothing is
// read or written, so a rejected request never reaches the database.
func (p CreateOrderParams) Validate() (CreateOrderParams, int64, error) {
	if err := validateEmail(p.CustomerEmail); err != nil {
		return p, 0, err
	}
	if err := validateCurrency(p.Currency); err != nil {
		return p, 0, err
	}
	if err := validatePaymentMethod(p.PaymentMethod); err != nil {
		return p, 0, err
	}
	switch {
	case p.Items == nil:
		return p, 0, invalid("items", CodeMissingField, "items is required: a list of 1 to %d lines", MaxItems)
	case len(p.Items) == 0 || len(p.Items) > MaxItems:
		return p, 0, invalid("items", CodeInvalidField, "an order has 1 to %d items, got %d", MaxItems, len(p.Items))
	}
	for i, it := range p.Items {
		if err := validateItem(i, it); err != nil {
			return p, 0, err
		}
	}
	total, ok := orderTotal(p.Items)
	if !ok {
		return p, 0, invalid("items", CodeAmountTooLarge, "the order total does not fit in a 64-bit amount of minor units; split the order")
	}
	if total > MaxAmount {
		return p, 0, invalid("items", CodeAmountTooLarge,
			"the order total is %d minor units; the payment provider charges at most %d in one payment, so split the order", total, int64(MaxAmount))
	}
	if p.ShippingAddress != nil {
		// A copy: the caller's address is not normalized behind its back.
		addr, err := p.ShippingAddress.validate()
		if err != nil {
			return p, 0, err
		}
		p.ShippingAddress = &addr
	}
	p.Currency = strings.ToLower(p.Currency)
	return p, total, nil
}

func validateEmail(s string) error {
	const field = "customer_email"
	if s == "" {
		return invalid(field, CodeMissingField, "customer_email is required")
	}
	if len(s) > MaxEmailLength {
		return invalid(field, CodeInvalidField, "an e-mail address has at most %d characters", MaxEmailLength)
	}
	// ParseAddress accepts display names and comments ("Ann <a@x.io>"); the
	// field must be the bare address and nothing else.
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Name != "" || addr.Address != s {
		return invalid(field, CodeInvalidField, "want a bare e-mail address such as ann@example.com")
	}
	domain := s[strings.LastIndexByte(s, '@')+1:]
	if !strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") {
		return invalid(field, CodeInvalidField, "the e-mail domain %q is not a fully qualified domain name", domain)
	}
	return nil
}

func validateCurrency(s string) error {
	const field = "currency"
	if s == "" {
		return invalid(field, CodeMissingField, "currency is required: an ISO 4217 code such as \"usd\"")
	}
	if len(s) != 3 || !isASCIILetters(s) {
		return invalid(field, CodeInvalidField, "want a three-letter ISO 4217 code such as \"usd\"")
	}
	if !IsCurrency(s) {
		return invalid(field, CodeUnknownCurrency, "%q is not an ISO 4217 currency with a minor unit", s)
	}
	return nil
}

func validatePaymentMethod(s string) error {
	const field = "payment_method"
	if s == "" {
		return invalid(field, CodeMissingField, "payment_method is required, e.g. \"pm_card_visa\"")
	}
	if len(s) > MaxPaymentMethodLength || !isIdentifier(s, "_") {
		return invalid(field, CodeInvalidField, "want a payment method ID of 1 to %d letters, digits and underscores, e.g. \"pm_card_visa\"", MaxPaymentMethodLength)
	}
	return nil
}

func validateItem(i int, it Item) error {
	prefix := fmt.Sprintf("items[%d].", i)
	switch {
	case it.SKU == "":
		return invalid(prefix+"sku", CodeMissingField, "sku is required")
	case len(it.SKU) > MaxSKULength || !isIdentifier(it.SKU, "._-"):
		return invalid(prefix+"sku", CodeInvalidField, "a SKU has 1 to %d characters from A-Z a-z 0-9 . _ -", MaxSKULength)
	case it.Quantity <= 0:
		return invalid(prefix+"quantity", CodeInvalidField, "quantity must be a positive integer, got %d", it.Quantity)
	case it.UnitAmount <= 0:
		return invalid(prefix+"unit_amount", CodeInvalidField, "unit_amount must be a positive integer in minor units, got %d", it.UnitAmount)
	}
	return nil
}

func isASCIILetters(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20 // fold to lower case
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// isIdentifier reports whether s is non-empty and made only of ASCII
// letters, digits and the bytes of extra.
func isIdentifier(s, extra string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte(extra, c) >= 0:
		default:
			return false
		}
	}
	return true
}
