package outbox

import (
	"math/rand/v2"
	"time"
)

// Backoff is an exponential backoff with full jitter: the delay before retry
// n is drawn uniformly from [0, min(Max, Base·2^(n-1))]. Full jitter spreads
// the retries of many events that failed together (Temporal was down, say)
// instead of sending them back in waves.
type Backoff struct {
	// Base is the ceiling of the first retry's delay. Mandatory, positive.
	Base time.Duration
	// Max caps every delay. Mandatory, at least Base.
	Max time.Duration
}

// Ceiling returns the largest delay retry attempt may get: Base·2^(attempt-1),
// capped at Max. Attempts below 1 count as 1.
func (b Backoff) Ceiling(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	c := b.Base
	for i := 1; i < attempt; i++ {
		if c >= b.Max/2 {
			return b.Max
		}
		c *= 2
	}
	return min(c, b.Max)
}

// Delay returns a random delay in [0, Ceiling(attempt)].
func (b Backoff) Delay(attempt int) time.Duration {
	c := b.Ceiling(attempt)
	if c <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(c) + 1))
}
