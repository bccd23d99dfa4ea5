package orders

import (
	"math"
	"math/bits"
)

// MaxAmount is the largest order total in minor units: Stripe charges at
// most eight digits in one payment (99,999,999, e.g. $999,999.99). A larger
// order would be accepted only to fail at the provider as payment_failed, so
// the API refuses it up front.
const MaxAmount = 99_999_999

// orderTotal returns the sum of quantity × unit_amount over items, in minor
// units, and false when the total (or one line) does not fit in an int64,
// the orders.amount column. The caller has already checked that every
// quantity and unit amount is positive, so the uint64 arithmetic below never
// sees a negative number; bits.Mul64 and bits.Add64 report an overflow
// instead of silently wrapping around.
func orderTotal(items []Item) (int64, bool) {
	var total uint64
	for _, it := range items {
		hi, line := bits.Mul64(uint64(it.Quantity), uint64(it.UnitAmount))
		if hi != 0 || line > math.MaxInt64 {
			return 0, false
		}
		sum, carry := bits.Add64(total, line, 0)
		if carry != 0 || sum > math.MaxInt64 {
			return 0, false
		}
		total = sum
	}
	return int64(total), true
}
