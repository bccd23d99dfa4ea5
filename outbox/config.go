package outbox

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outflow/outflow/failpoints"
)

// Config tunes a [Relay]. The zero value is ready to use: every field has a
// default, applied by [New].
type Config struct {
	// Owner is written to claimed_by and fences every later write of this
	// relay. It must be unique among live relays. Defaults to
	// "hostname-pid-random", unique per process start (and per Relay).
	Owner string
	// BatchSize is the most events one claim takes. Defaults to 100.
	BatchSize int
	// Lease is how long a claim is this relay's alone; after it another relay
	// may take the event over. Defaults to 30 seconds.
	Lease time.Duration
	// PublishTimeout bounds one Publish call. At most half the Lease, so a
	// batch has time to start its publishes before the lease runs short.
	// Defaults to the smaller of 10 seconds and half the Lease.
	PublishTimeout time.Duration
	// MaxInFlight is the most Publish calls running at once, across
	// aggregates (one aggregate never has two). Defaults to 16.
	MaxInFlight int
	// PollInterval is the safety poll: the longest an idle relay waits
	// without a NOTIFY before claiming again. Commit-to-publish latency comes
	// from LISTEN/NOTIFY, not from this. Defaults to 5 seconds.
	PollInterval time.Duration
	// MaxAttempts is the number of attempts after which a failing event is
	// quarantined (OUTFLOW_MAX_ATTEMPTS). Defaults to 20.
	MaxAttempts int
	// RetryBase is the ceiling of the first retry's delay; later ceilings
	// double (full jitter, see [Backoff]). Defaults to 1 second.
	RetryBase time.Duration
	// RetryMax caps a retry's delay. Defaults to 5 minutes.
	RetryMax time.Duration
	// MarkDelay is how long acknowledgements are collected before one
	// statement marks them published. Defaults to 5 milliseconds.
	MarkDelay time.Duration
	// MarkBatchSize marks at once when this many acknowledgements are
	// waiting. Defaults to 64.
	MarkBatchSize int
	// GaugeInterval is how often the backlog gauges (outbox_pending_events,
	// outbox_oldest_pending_age_seconds, outbox_quarantined_events) are
	// recomputed; only when Registerer is set. Defaults to 15 seconds.
	GaugeInterval time.Duration
	// Registerer receives the relay's metrics. Defaults to nil: metrics are
	// kept but not registered, and the gauge query never runs. Several relays
	// may share one Registerer; they then share the collectors.
	Registerer prometheus.Registerer
	// Logger receives start-up, per-event error and listener logs. Defaults
	// to slog.Default().
	Logger *slog.Logger
	// Failpoints injects faults at relay.after_claim, relay.after_publish and
	// relay.before_mark_commit. Defaults to nil: none. The starter passes
	// failpoints.FromEnv().
	Failpoints *failpoints.Set
}

func (c *Config) setDefaults() error {
	if c.Owner == "" {
		owner, err := newOwner()
		if err != nil {
			return err
		}
		c.Owner = owner
	}
	if c.BatchSize == 0 {
		c.BatchSize = 100
	}
	if c.Lease == 0 {
		c.Lease = 30 * time.Second
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = min(10*time.Second, c.Lease/2)
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 16
	}
	if c.PollInterval == 0 {
		c.PollInterval = 5 * time.Second
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 20
	}
	if c.RetryBase == 0 {
		c.RetryBase = time.Second
	}
	if c.RetryMax == 0 {
		c.RetryMax = 5 * time.Minute
	}
	if c.MarkDelay == 0 {
		c.MarkDelay = 5 * time.Millisecond
	}
	if c.MarkBatchSize == 0 {
		c.MarkBatchSize = 64
	}
	if c.GaugeInterval == 0 {
		c.GaugeInterval = 15 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

func (c *Config) validate() error {
	switch {
	case len(c.Owner) > 200:
		return fmt.Errorf("outbox: Config.Owner is %d bytes; keep it under 200", len(c.Owner))
	case c.BatchSize < 1 || c.BatchSize > 10000:
		return fmt.Errorf("outbox: Config.BatchSize %d is out of range; use 1 to 10000 (default 100)", c.BatchSize)
	case c.Lease < 100*time.Millisecond:
		return fmt.Errorf("outbox: Config.Lease %s is too short; use at least 100ms (default 30s)", c.Lease)
	case c.PublishTimeout <= 0 || c.PublishTimeout > c.Lease/2:
		return fmt.Errorf("outbox: Config.PublishTimeout %s must be positive and at most half of Config.Lease %s, so every publish ends well before its lease can be taken over; lower PublishTimeout or raise Lease",
			c.PublishTimeout, c.Lease)
	case c.MaxInFlight < 1:
		return fmt.Errorf("outbox: Config.MaxInFlight %d must be at least 1 (default 16)", c.MaxInFlight)
	case c.PollInterval < 10*time.Millisecond:
		return fmt.Errorf("outbox: Config.PollInterval %s is too short; use at least 10ms (default 5s)", c.PollInterval)
	case c.MaxAttempts < 1:
		return fmt.Errorf("outbox: Config.MaxAttempts %d must be at least 1 (default 20)", c.MaxAttempts)
	case c.RetryBase < 0 || c.RetryMax < c.RetryBase:
		return fmt.Errorf("outbox: Config.RetryBase %s and RetryMax %s must satisfy 0 <= RetryBase <= RetryMax", c.RetryBase, c.RetryMax)
	case c.MarkDelay < 0:
		return fmt.Errorf("outbox: Config.MarkDelay %s must not be negative (default 5ms)", c.MarkDelay)
	case c.MarkBatchSize < 1:
		return fmt.Errorf("outbox: Config.MarkBatchSize %d must be at least 1 (default 64)", c.MarkBatchSize)
	case c.GaugeInterval < 10*time.Millisecond:
		return fmt.Errorf("outbox: Config.GaugeInterval %s is too short; use at least 10ms (default 15s)", c.GaugeInterval)
	}
	return nil
}
