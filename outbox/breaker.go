package outbox

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
)

// breaker is the relay's circuit breaker on its sink. It opens after
// BreakerThreshold sink faults in a row (an acknowledgement resets the
// count): the relay then stops claiming, gives back what it holds without
// counting attempts, and probes the sink with backoff (ProbeBase doubling to
// ProbeMax, full jitter); the first probe that succeeds closes it and the
// relay claims again. One log line per change of state, never one per
// event. Both sources share one: a CDC relay's stream hands its events to
// the sweeper while the breaker is open, and the sweeper probes.
type breaker struct {
	threshold int
	backoff   Backoff
	logger    *slog.Logger
	owner     string
	up        prometheus.Gauge

	// acks counts the sink's acknowledgements: the evidence that it
	// answers, for judge (fault.go).
	acks atomic.Int64

	mu sync.Mutex
	// overdue are the events whose last publish ran out of time while the
	// sink answered others (judge, fault.go).
	overdue  map[uuid.UUID]bool
	open     bool
	faults   int // sink faults in a row
	openedAt time.Time
	lastErr  error
}

func newBreaker(cfg *RelayConfig, up prometheus.Gauge) *breaker {
	up.Set(1)
	return &breaker{
		threshold: cfg.BreakerThreshold,
		backoff:   Backoff{Base: cfg.ProbeBase, Max: cfg.ProbeMax},
		logger:    cfg.Logger,
		owner:     cfg.Owner,
		up:        up,
		overdue:   map[uuid.UUID]bool{},
	}
}

// closed reports whether the relay may claim and publish.
func (b *breaker) closed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.open
}

// acked records an acknowledgement: the sink answers.
func (b *breaker) acked() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults = 0
}

// sinkFault records a publish that failed for the sink's fault, and opens
// the breaker at the threshold.
func (b *breaker) sinkFault(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults++
	b.lastErr = err
	if b.open || b.faults < b.threshold {
		return
	}
	b.open, b.openedAt = true, time.Now()
	b.up.Set(0)
	b.logger.Error("outbox relay: the sink is unavailable; stopping claims and probing it (no attempts are counted while it is down)",
		"owner", b.owner, "sink_faults_in_a_row", b.faults, "error", err)
}

// probeUntilClosed probes the sink with backoff until a probe succeeds, then
// closes the breaker; it returns false when ctx ends first. A nil probe
// (the publisher is no Prober) succeeds after each backoff: the relay
// probes by publishing.
func (b *breaker) probeUntilClosed(ctx context.Context, probe func(context.Context) error, timeout time.Duration) bool {
	for n := 1; ; n++ {
		if !sleep(ctx, b.backoff.Delay(n)) {
			return false
		}
		var err error
		if probe != nil {
			pctx, cancel := context.WithTimeout(ctx, timeout)
			err = probe(pctx)
			cancel()
		}
		if ctx.Err() != nil {
			return false
		}
		if err != nil {
			b.logger.Debug("outbox relay: the sink still does not answer", "owner", b.owner, "probe", n, "error", err)
			continue
		}
		b.mu.Lock()
		down := time.Since(b.openedAt)
		b.open, b.faults = false, 0
		b.up.Set(1)
		b.mu.Unlock()
		b.logger.Info("outbox relay: the sink answers again; claiming", "owner", b.owner, "down_for", down.Round(time.Millisecond), "probes", n)
		return true
	}
}
