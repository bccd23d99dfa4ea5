package providersim

import "fmt"

// Amounts are integers in the currency's smallest unit (cents for usd), as
// in Stripe's API. What depends on the currency is here: the currencies the
// simulator accepts, Stripe's limits on an amount, and how one reads in a
// message.

// minimumAmounts are Stripe's minimum charge amounts (smallest currency
// unit) for the currencies the simulator accepts.
var minimumAmounts = map[string]int64{
	"usd": 50, "eur": 50, "gbp": 30, "cad": 50, "aud": 50, "chf": 50, "jpy": 50,
	"sek": 300, "nok": 300, "dkk": 250, "nzd": 50, "sgd": 50, "hkd": 400, "mxn": 1000, "pln": 200,
}

// maxAmount is Stripe's largest charge amount (eight digits).
const maxAmount = 99999999

// money formats an amount in the smallest currency unit for messages. jpy is
// a zero-decimal currency (its smallest unit is the yen), so it has no
// fraction to print.
func money(amount int64, currency string) string {
	if currency == "jpy" {
		return fmt.Sprintf("%d %s", amount, currency)
	}
	return fmt.Sprintf("%d.%02d %s", amount/100, amount%100, currency)
}
