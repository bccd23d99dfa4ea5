package orders

import (
	_ "embed"
	"strings"
	"unicode/utf8"
)

// Limits of a shipping address, in bytes of UTF-8: generous for any postal
// system, small enough to print on a label.
const (
	// MaxAddressNameLength is the longest recipient name accepted.
	MaxAddressNameLength = 200
	// MaxAddressLineLength is the longest line1, line2 or city accepted.
	MaxAddressLineLength = 200
	// MaxPostalCodeLength is the longest postal code accepted (the longest
	// in use, with separators, is about 10).
	MaxPostalCodeLength = 16
)

// ShippingAddress is where an order ships: the schema version 2 addition to
// OrderCreated, stored on the order. Country is an ISO 3166-1 alpha-2 code,
// upper case (lower case is accepted and normalized).
type ShippingAddress struct {
	Name  string `json:"name"`
	Line1 string `json:"line1"`
	// Line2 is optional.
	Line2      string `json:"line2,omitempty"`
	City       string `json:"city"`
	PostalCode string `json:"postal_code"`
	Country    string `json:"country"`
}

// iso3166 lists the ISO 3166-1 alpha-2 codes; see the file's header.
//
//go:embed iso3166.txt
var iso3166 string

var countries = parseISO3166(iso3166)

func parseISO3166(text string) map[string]bool {
	m := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, code := range strings.Fields(line) {
			if len(code) != 2 || !isASCIILetters(code) || strings.ToUpper(code) != code {
				panic("orders: iso3166.txt: malformed code " + code)
			}
			m[code] = true
		}
	}
	return m
}

// IsCountry reports whether code, in any letter case, is an assigned ISO
// 3166-1 alpha-2 country code.
func IsCountry(code string) bool {
	return len(code) == 2 && countries[strings.ToUpper(code)]
}

// validate checks every field, in the order of the JSON object, and returns
// the address with its country in upper case, or a *ValidationError whose
// field is the JSON path ("shipping_address.postal_code").
func (a ShippingAddress) validate() (ShippingAddress, error) {
	const prefix = "shipping_address."
	for _, f := range []struct {
		name, value string
		max         int
		optional    bool
	}{
		{"name", a.Name, MaxAddressNameLength, false},
		{"line1", a.Line1, MaxAddressLineLength, false},
		{"line2", a.Line2, MaxAddressLineLength, true},
		{"city", a.City, MaxAddressLineLength, false},
	} {
		if err := validateAddressText(prefix+f.name, f.value, f.max, f.optional); err != nil {
			return a, err
		}
	}
	if err := validatePostalCode(prefix+"postal_code", a.PostalCode); err != nil {
		return a, err
	}
	switch {
	case a.Country == "":
		return a, invalid(prefix+"country", CodeMissingField, "country is required: an ISO 3166-1 alpha-2 code such as \"DE\"")
	case !IsCountry(a.Country):
		return a, invalid(prefix+"country", CodeInvalidField, "%q is not an ISO 3166-1 alpha-2 country code such as \"DE\"", a.Country)
	}
	a.Country = strings.ToUpper(a.Country)
	return a, nil
}

// validateAddressText accepts printable UTF-8 without leading or trailing
// space: what goes on a label must be exactly what the customer reads back.
func validateAddressText(field, s string, max int, optional bool) error {
	switch {
	case s == "" && optional:
		return nil
	case s == "":
		return invalid(field, CodeMissingField, "%s is required", field)
	case len(s) > max:
		return invalid(field, CodeInvalidField, "%s has at most %d bytes", field, max)
	case !utf8.ValidString(s) || strings.TrimSpace(s) != s || strings.ContainsFunc(s, isControl):
		return invalid(field, CodeInvalidField, "%s must be printable text without control characters or leading or trailing spaces", field)
	}
	return nil
}

// validatePostalCode accepts letters, digits, spaces and hyphens, which
// covers every national format ("10115", "SW1A 1AA", "1010-001").
func validatePostalCode(field, s string) error {
	switch {
	case s == "":
		return invalid(field, CodeMissingField, "postal_code is required")
	case len(s) > MaxPostalCodeLength || !isIdentifier(s, " -") || strings.TrimSpace(s) != s:
		return invalid(field, CodeInvalidField, "a postal code has 1 to %d letters, digits, inner spaces and hyphens", MaxPostalCodeLength)
	}
	return nil
}

func isControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r < 0xa0) || r == '\u2028' || r == '\u2029'
}
