package outbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
)

func TestBackoffCeilingDoublesAndCaps(t *testing.T) {
	t.Parallel()
	b := outbox.Backoff{Base: time.Second, Max: time.Minute}
	want := []time.Duration{time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, time.Minute, time.Minute}
	for attempt, w := range want { // attempt 0 counts as 1
		require.Equal(t, w, b.Ceiling(attempt), "attempt %d", attempt)
	}
	// No overflow however many attempts.
	require.Equal(t, time.Minute, b.Ceiling(10_000))
	huge := outbox.Backoff{Base: time.Hour, Max: 1<<63 - 1}
	require.Positive(t, huge.Ceiling(200))
}

func TestBackoffDelayIsFullJitterWithinCeiling(t *testing.T) {
	t.Parallel()
	b := outbox.Backoff{Base: 100 * time.Millisecond, Max: 2 * time.Second}
	for _, attempt := range []int{1, 3, 5, 50} {
		ceiling := b.Ceiling(attempt)
		lo, hi := ceiling, time.Duration(0)
		for range 5000 {
			d := b.Delay(attempt)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, ceiling)
			lo, hi = min(lo, d), max(hi, d)
		}
		// Full jitter: the draws span (nearly) the whole [0, ceiling] range.
		require.Less(t, lo, ceiling/20, "attempt %d: lowest draw %s", attempt, lo)
		require.Greater(t, hi, ceiling*19/20, "attempt %d: highest draw %s", attempt, hi)
	}
	require.Zero(t, outbox.Backoff{}.Delay(3), "a zero backoff retries at once")
}
