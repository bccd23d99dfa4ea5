package outbox

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// throttle paces the relay's publishes. At most limit run at once: limit
// starts at MaxInFlight, halves at every throttled publish (down to one) and
// grows by one after limit acknowledgements in a row (up to MaxInFlight
// again): additive increase, multiplicative decrease, so a relay draining a
// backlog settles just under what the sink accepts. When Rate is set, at
// most Rate publishes start a second besides (a token bucket, burst one
// second's worth), so an operator can keep the relay under a namespace's
// quota before it throttles. Both sources of a CDC relay share one.
type throttle struct {
	max       int
	rate      *rate.Limiter // nil: no ceiling
	throttled prometheus.Counter

	mu       sync.Mutex
	limit    int
	inFlight int
	streak   int
	freed    chan struct{} // closed and replaced when a slot frees up
}

func newThrottle(cfg *RelayConfig, throttled prometheus.Counter) *throttle {
	t := &throttle{max: cfg.MaxInFlight, limit: cfg.MaxInFlight, throttled: throttled, freed: make(chan struct{})}
	if cfg.Rate > 0 {
		t.rate = rate.NewLimiter(rate.Limit(cfg.Rate), max(1, int(cfg.Rate)))
	}
	return t
}

// acquire waits for a publish slot (and a token of the rate ceiling); it
// fails only when ctx ends.
func (t *throttle) acquire(ctx context.Context) error {
	for {
		t.mu.Lock()
		if t.inFlight < t.limit {
			t.inFlight++
			t.mu.Unlock()
			break
		}
		freed := t.freed
		t.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-freed:
		}
	}
	if t.rate != nil {
		if err := t.rate.Wait(ctx); err != nil {
			t.done(faultSink, false, &publishCall{})
			return err
		}
	}
	return nil
}

// done returns a slot after a publish: acked, or failed with fault f; the
// call's throttles reported by the publisher (ReportThrottle) count too. A
// call that was throttled at all halves the limit once; each throttled
// request is counted once.
func (t *throttle) done(f fault, acked bool, call *publishCall) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inFlight--
	reported := call.throttles.Load()
	switch {
	case reported > 0 || f == faultThrottle:
		t.throttled.Add(float64(max(reported, 1)))
		t.limit = max(1, t.limit/2)
		t.streak = 0
	case acked:
		t.streak++
		if t.streak >= t.limit && t.limit < t.max {
			t.limit++
			t.streak = 0
		}
	}
	close(t.freed)
	t.freed = make(chan struct{})
}

// publishCall is one Publish call as the throttle sees it: the throttled
// requests its publisher reported.
type publishCall struct{ throttles atomic.Int64 }

type publishCallKey struct{}

// withCall returns ctx for a Publish call, carrying call for ReportThrottle.
func withCall(ctx context.Context, call *publishCall) context.Context {
	return context.WithValue(ctx, publishCallKey{}, call)
}

// ReportThrottle tells the relay, from inside a Publish call (ctx is the
// call's context, or one derived from it), that the sink throttled a
// request of it, even though the call may still succeed: a client that
// retries throttled requests itself (the Temporal SDK retries
// ResourceExhausted within the call's deadline) hides the throttle from the
// error the relay sees. Each report counts one throttled request
// (outbox_sink_throttled_total) and the relay publishes fewer at once.
// Outside a Publish call it does nothing. temporalpub.ThrottleInterceptor
// reports each throttled gRPC attempt.
func ReportThrottle(ctx context.Context) {
	if call, ok := ctx.Value(publishCallKey{}).(*publishCall); ok {
		call.throttles.Add(1)
	}
}
