package personal

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
)

// personalJSONNames are field names that hold personal data in outflow's
// wire formats.
var personalJSONNames = map[string]bool{
	"customer_email": true, "email": true, "to": true, "shipping_address": true,
	"items": true, "sku": true, "line1": true, "line2": true, "postal_code": true, "city": true, "name": true,
}

// TestEveryPersonalFieldIsCovered: every struct of the packages whose values
// travel through Temporal (handoff, activities, workflows) that has a field
// holding personal data is either recognised by Subject or nested only in a
// value that is. A new such type fails here until Subject knows it, so it
// can never slip into histories under the master key alone.
func TestEveryPersonalFieldIsCovered(t *testing.T) {
	t.Parallel()
	root, err := checkout.Root()
	require.NoError(t, err)
	var found []string
	for _, dir := range []string{"handoff", "activities", "workflows"} {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		require.NoError(t, err)
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
			require.NoError(t, err)
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return true
				}
				for _, field := range st.Fields.List {
					if field.Tag == nil {
						continue
					}
					tag := reflect.StructTag(strings.Trim(field.Tag.Value, "`"))
					name, _, _ := strings.Cut(tag.Get("json"), ",")
					if personalJSONNames[name] {
						found = append(found, dir+"."+ts.Name.Name)
						break
					}
				}
				return true
			})
		}
	}
	sort.Strings(found)
	require.Equal(t, []string{
		"activities.Email",    // the email provider's request body, built inside SendEmail: never a payload
		"activities.EmailTag", // part of it
		// The inventory's answers, as the saga reads them (ReserveStock's
		// result, the inventory's signals): SKUs without the customer.
		// KNOWN GAP (docs/privacy.md): the result is encrypted with the
		// master key only, and the signals with no key at all, since the
		// inventory's client has no codec; forget-customer does not reach
		// them.
		"activities.InventoryItem",
		"activities.InventoryOutcome",
		"activities.InventoryShortage",
		"activities.ProjectOrderResult", // recognised by Subject
		"activities.ReserveStockInput",  // recognised by Subject
		"activities.SendEmailInput",     // recognised by Subject
		"activities.ShippingAddress",    // nested in SendEmailInput only
	}, found, "a type carrying personal data must be recognised by personal.Subject (internal/personal), or its values are encrypted with the master key only and survive forget-customer")
}

func TestSubject(t *testing.T) {
	t.Parallel()
	payload, err := json.Marshal(orders.OrderCreated{OrderID: "o", CustomerEmail: "Ada@Example.com", Currency: "usd", PaymentMethod: "pm", Amount: 1})
	require.NoError(t, err)
	cancelled, err := json.Marshal(orders.OrderCancelled{OrderID: "o", CreatedEventID: "e"})
	require.NoError(t, err)
	for _, c := range []struct {
		v    any
		want string
	}{
		{handoff.EventInput{EventType: orders.EventOrderCreated, Payload: payload}, "Ada@Example.com"},
		{&handoff.EventInput{EventType: orders.EventOrderCreated, Payload: payload}, "Ada@Example.com"},
		{handoff.EventInput{EventType: orders.EventOrderCancelled, Payload: cancelled}, ""},
		{activities.SendEmailInput{To: "ada@example.com"}, "ada@example.com"},
		{&activities.SendEmailInput{To: "ada@example.com"}, "ada@example.com"},
		{activities.ProjectOrderResult{CustomerEmail: "ada@example.com"}, "ada@example.com"},
		{activities.ProjectOrderResult{}, ""},
		{activities.ChargeInput{OrderID: "o"}, ""},
		{handoff.SagaResult{}, ""},
		{"ada@example.com", ""}, // a bare string is no known value
	} {
		got, ok := Subject(c.v)
		require.Equal(t, c.want, got, "%T", c.v)
		require.Equal(t, c.want != "", ok, "%T", c.v)
	}
}
