package codec_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/orders"
)

// acceptedByTheOrderAPI is the order API's own check of customer_email
// (net/mail, a bare address, a qualified domain).
func acceptedByTheOrderAPI(email string) bool {
	_, _, err := orders.CreateOrderParams{CustomerEmail: email, Currency: "usd", PaymentMethod: "pm_card_visa",
		Items: []orders.Item{{SKU: "SKU-1", Quantity: 1, UnitAmount: 100}}}.Validate()
	return err == nil
}

// contexts are the strings an address reaches the safety net in: a memo
// string, a failure message quoting it, a provider's JSON error body inside
// a message (escaped twice), a line of its own.
var contexts = []func(email string) any{
	func(e string) any { return e },
	func(e string) any { return `email k for order o rejected: recipient "` + e + `" bounced` },
	func(e string) any {
		return "resend: HTTP 422: " + mustJSON(map[string]string{"message": "invalid to: " + e})
	},
	func(e string) any { return map[string]any{"error": "line one\n" + e + "\nline three", "attempt": 2} },
	func(e string) any { return "sent to <" + e + ">, (" + e + "); " + e + "." },
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// The safety net finds every address the order API accepts, exactly (the
// subject hash is the customer's only if the address is theirs), in the
// JSON a payload holds.
func TestEmailInFindsWhatTheOrderAPIAccepts(t *testing.T) {
	t.Parallel()
	for _, email := range []string{
		"josé@example.com",
		"ada@bücher.de",
		"a&b@example.com",
		"o'brien@example.ie",
		"日本@例え.jp",
		"a/b=c?d^e`f|g~h!#$%*{}@x.io",
		"Ada.Lovelace+orders@Mail.Example.CO.UK",
		"a@x.i",
		"a@[127.0.0.1]",
		"user@xn--bcher-kva.de",
	} {
		require.True(t, acceptedByTheOrderAPI(email), email)
		assertFound(t, email)
	}
	// What the order API refuses is no customer's address; nothing of it
	// may be taken for another customer's.
	for in, want := range map[string]string{
		"go.temporal.io/sdk@v1.51.0/x.go":                   "",
		"panic at /root/go/pkg/mod/golang.org/x/net@v0.1.0": "",
		"worker 21431@vm@":                                  "",
		"no address":                                        "",
		`{"to":"a\u0026b@example.com"}`:                     "a&b@example.com",
		`{"to":"line\nada@example.com"}`:                    "ada@example.com",
	} {
		got, ok := codec.EmailIn([]byte(in))
		require.Equal(t, want, got, in)
		require.Equal(t, want != "", ok, in)
	}
}

// assertFound requires EmailIn to find exactly email in every context, as
// the default converter writes it (JSON).
func assertFound(t *testing.T, email string) {
	t.Helper()
	for i, c := range contexts {
		data := []byte(mustJSON(c(email)))
		got, ok := codec.EmailIn(data)
		require.True(t, ok, "context %d: %s", i, data)
		require.Equal(t, email, got, "context %d: %s", i, data)
	}
}

// netCovers reports whether the safety net promises to find email: every
// address the order API accepts, except those with a non-ASCII space,
// punctuation or control character, and those whose domain holds ASCII
// punctuation other than '-' and '_' (docs/privacy.md: the net reads them
// as the end of an address in a sentence).
func netCovers(email string) bool {
	if !acceptedByTheOrderAPI(email) {
		return false
	}
	for _, r := range email {
		if r >= 0x80 && !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.S) {
			return false
		}
	}
	domain := email[strings.LastIndexByte(email, '@')+1:]
	if strings.HasPrefix(domain, "[") {
		return true
	}
	for _, r := range domain {
		if r < 0x80 && !(r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	// A Go module version is taken for a module path, not an address.
	return !strings.Contains(email, "/") || !strings.HasPrefix(domain, "v")
}

// FuzzEmailIn: whatever the order API accepts (and the net covers) is
// found exactly, in every context.
func FuzzEmailIn(f *testing.F) {
	for _, s := range []string{"josé@example.com", "ada@bücher.de", "a&b@example.com", "a.b@c.d", "x@[1.2.3.4]", "ñ{}@ü.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, email string) {
		if !netCovers(email) {
			return
		}
		for i, c := range contexts {
			data := []byte(mustJSON(c(email)))
			got, ok := codec.EmailIn(data)
			if !ok || got != email {
				t.Fatalf("context %d: EmailIn(%s) = %q, %v; want %q", i, data, got, ok, email)
			}
		}
	})
}

// Example of the JSON the net reads: the default converter escapes '&'.
func ExampleEmailIn() {
	data, _ := json.Marshal(`rejected: "a&b@example.com"`)
	fmt.Println(string(data))
	fmt.Println(codec.EmailIn(data))
	// Output:
	// "rejected: \"a\u0026b@example.com\""
	// a&b@example.com true
}
