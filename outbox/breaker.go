package outbox

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// breaker is the relay's circuit breaker on its sink. It opens after
// BreakerThreshold sink faults in a row (an acknowledgement resets the
// count): the relay then stops claiming, gives back what it holds without
// counting attempts, and probes the sink with backoff (ProbeBase doubling to
// ProbeMax, full jitter); the first probe that succeeds closes it and the
// relay claims again. One log line per change of state, never one per
// event. Both sources share one: a CDC relay's stream hands its events to
// the sweeper while the breaker is open, and the sweeper probes. While the
// sink is down the relay has a row in outbox_sink_breakers (breaker.sql),
// which the operator's status and console read: written when probing
// starts, renewed by each failed probe, deleted when a probe succeeds (a
// relay without a probe: when the sink next acknowledges a publish) or the
// relay stops probing.
type breaker struct {
	threshold int
	backoff   Backoff
	logger    *slog.Logger
	owner     string
	up        prometheus.Gauge
	db        *pgxpool.Pool

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
	// unconfirmed: the breaker closed without a probe; the relay's row in
	// outbox_sink_breakers stays until the sink acknowledges a publish.
	unconfirmed bool
}

func newBreaker(cfg *RelayConfig, up prometheus.Gauge, db *pgxpool.Pool) *breaker {
	up.Set(1)
	return &breaker{
		db:        db,
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
	b.faults = 0
	confirmed := b.unconfirmed
	b.unconfirmed = false
	b.mu.Unlock()
	if confirmed {
		b.unrecord(context.Background())
	}
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
// probes by publishing. It keeps the relay's row in outbox_sink_breakers
// from its start to its end.
func (b *breaker) probeUntilClosed(ctx context.Context, probe func(context.Context) error, timeout time.Duration) bool {
	b.mu.Lock()
	openedAt, lastErr := b.openedAt, b.lastErr
	b.mu.Unlock()
	b.record(ctx, "open", func(ctx context.Context) error {
		_, err := qBreakerOpen.Exec(ctx, b.db, breakerOpenArgs{Owner: b.owner, OpenedAt: openedAt, LastError: errText(lastErr)})
		return err
	})
	for n := 1; ; n++ {
		if !sleep(ctx, b.backoff.Delay(n)) {
			b.unrecord(ctx)
			return false
		}
		var err error
		if probe != nil {
			pctx, cancel := context.WithTimeout(ctx, timeout)
			err = probe(pctx)
			cancel()
		}
		if ctx.Err() != nil {
			b.unrecord(ctx)
			return false
		}
		if err != nil {
			b.logger.Debug("outbox relay: the sink still does not answer", "owner", b.owner, "probe", n, "error", err)
			probed := breakerProbedArgs{Owner: b.owner, LastError: err.Error()}
			b.record(ctx, "probed", func(ctx context.Context) error {
				_, err := qBreakerProbed.Exec(ctx, b.db, probed)
				return err
			})
			continue
		}
		b.mu.Lock()
		down := time.Since(b.openedAt)
		b.open, b.faults = false, 0
		b.unconfirmed = probe == nil
		b.up.Set(1)
		b.mu.Unlock()
		if probe != nil {
			b.unrecord(ctx)
		}
		b.logger.Info("outbox relay: the sink answers again; claiming", "owner", b.owner, "down_for", down.Round(time.Millisecond), "probes", n)
		return true
	}
}

// record writes the breaker's row (write): for at most five seconds, also
// after ctx ended (the relay stopping deletes its row). A failure is
// logged and changes nothing else: the record is for operators, the
// breaker works without it.
func (b *breaker) record(ctx context.Context, what string, write func(context.Context) error) {
	if b.db == nil {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := write(wctx); err != nil {
		b.logger.Warn("outbox relay: recording the sink breaker's state failed", "owner", b.owner, "state", what, "error", err)
	}
}

// unrecord deletes the relay's row: its sink answers, or it stopped probing.
func (b *breaker) unrecord(ctx context.Context) {
	b.record(ctx, "closed", func(ctx context.Context) error {
		_, err := qBreakerClosed.Exec(ctx, b.db, ownerArgs{Owner: b.owner})
		return err
	})
}

// errText is err's message, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
