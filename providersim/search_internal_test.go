package providersim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSearchQuery(t *testing.T) {
	t.Parallel()
	pi := &paymentIntent{
		pos: position{created: 1700000000}, amount: 2500, currency: "usd", status: "succeeded",
		metadata: map[string]string{"event_id": "e-1", "order_id": "O-42", "note": "it's"},
	}
	for q, want := range map[string]bool{
		"metadata['event_id']:'e-1'":                       true,
		"metadata['event_id']:'E-1'":                       true, // ':' is case-insensitive
		"metadata['event_id']:'e-2'":                       false,
		`metadata['note']:'it\'s'`:                         true,
		"metadata['order_id']~'o-4'":                       true,
		"metadata['event_id']:'e-1' and status:'failed'":   false,
		"metadata['event_id']:'e-2' or status:'succeeded'": true,
		"-metadata['event_id']:'e-1'":                      false,
		"metadata['gone']:null":                            true,
		"-metadata['event_id']:null":                       true,
		"amount>=2500 amount<2501":                         true,
		"amount>2500":                                      false,
		"amount:2500":                                      true,
		"created>1699999999 AND created<=1700000000":       true,
		"created=1700000001":                               false,
		"currency:'USD'":                                   true,
		"customer:null":                                    true,
	} {
		sq, err := parseSearchQuery(q)
		require.NoError(t, err, q)
		require.Equal(t, want, sq.match(pi), q)
	}
	for _, q := range []string{
		"", "   ", "status", "status:", "status:'a' AND", "status:'a' AND amount:1 OR amount:2",
		"status:'a' OR amount:1 amount:2", "metadata:'x'", "metadata['x':'y'", "status~'ab'", "amount~'100'",
		"amount:1 amount:1 amount:1 amount:1 amount:1 amount:1 amount:1 amount:1 amount:1 amount:1 amount:1",
	} {
		_, err := parseSearchQuery(q)
		require.Error(t, err, q)
	}
}
