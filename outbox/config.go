package outbox

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/outflow/outflow/outbox/failpoints"
)

// The defaults of [RelayConfig], which [NewRelay] gives the fields left zero.
const (
	// BatchSizeDefault is the default of RelayConfig.BatchSize.
	BatchSizeDefault = 100
	// LeaseDefault is the default of RelayConfig.Lease.
	LeaseDefault = 30 * time.Second
	// PublishTimeoutDefault is the default of RelayConfig.PublishTimeout
	// when half the Lease is longer.
	PublishTimeoutDefault = 10 * time.Second
	// MaxInFlightDefault is the default of RelayConfig.MaxInFlight.
	MaxInFlightDefault = 16
	// PollIntervalDefault is the default of RelayConfig.PollInterval.
	PollIntervalDefault = 5 * time.Second
	// MaxAttemptsDefault is the default of RelayConfig.MaxAttempts, and of
	// OUTFLOW_MAX_ATTEMPTS.
	MaxAttemptsDefault = 20
	// RetryBaseDefault is the default of RelayConfig.RetryBase.
	RetryBaseDefault = time.Second
	// RetryMaxDefault is the default of RelayConfig.RetryMax.
	RetryMaxDefault = 5 * time.Minute
	// MarkDelayDefault is the default of RelayConfig.MarkDelay.
	MarkDelayDefault = 5 * time.Millisecond
	// BacklogMarkDelayDefault is the default of RelayConfig.BacklogMarkDelay.
	BacklogMarkDelayDefault = 50 * time.Millisecond
	// MarkBatchSizeDefault is the default of RelayConfig.MarkBatchSize.
	MarkBatchSizeDefault = 64
	// GaugeIntervalDefault is the default of RelayConfig.GaugeInterval.
	GaugeIntervalDefault = 15 * time.Second
	// BreakerThresholdDefault is the default of RelayConfig.BreakerThreshold.
	BreakerThresholdDefault = 5
	// ProbeBaseDefault is the default of RelayConfig.ProbeBase.
	ProbeBaseDefault = time.Second
	// ProbeMaxDefault is the default of RelayConfig.ProbeMax.
	ProbeMaxDefault = 30 * time.Second
)

// The bounds validate enforces besides positive counts, as RelayConfig's
// documentation states them.
const (
	ownerMaxLen      = 200
	batchSizeMax     = 10000
	leaseMin         = 100 * time.Millisecond
	pollIntervalMin  = 10 * time.Millisecond
	gaugeIntervalMin = 10 * time.Millisecond
)

// RelayConfig tunes a [Relay]. The zero value is ready to use: every field
// has a default, applied by [NewRelay].
type RelayConfig struct {
	// Owner is written to claimed_by and fences every later write of this
	// relay. It must be unique among live relays, and at most 200 bytes.
	// Defaults to "hostname-pid-random", unique per process start (and per
	// Relay).
	Owner string
	// BatchSize is the most events one claim takes, 1 to 10000. Defaults to
	// [BatchSizeDefault] (100).
	BatchSize int
	// Lease is how long a claim is this relay's alone; after it another relay
	// may take the event over. At least 100ms. Defaults to [LeaseDefault]
	// (30 seconds).
	Lease time.Duration
	// PublishTimeout bounds one Publish call. At most half the Lease, so a
	// batch has time to start its publishes before the lease runs short.
	// Defaults to the smaller of [PublishTimeoutDefault] (10 seconds) and
	// half the Lease.
	PublishTimeout time.Duration
	// MaxInFlight is the most Publish calls running at once, across
	// aggregates (one aggregate never has two). Defaults to
	// [MaxInFlightDefault] (16).
	MaxInFlight int
	// PollInterval is the safety poll: the longest an idle relay waits
	// without a NOTIFY before claiming again. Commit-to-publish latency comes
	// from LISTEN/NOTIFY, not from this. At least 10ms. Defaults to
	// [PollIntervalDefault] (5 seconds).
	PollInterval time.Duration
	// MaxAttempts is the number of attempts after which a failing event is
	// quarantined (OUTFLOW_MAX_ATTEMPTS). Defaults to [MaxAttemptsDefault]
	// (20).
	MaxAttempts int
	// RetryBase is the ceiling of the first retry's delay; later ceilings
	// double (full jitter, see [Backoff]). Defaults to [RetryBaseDefault]
	// (1 second).
	RetryBase time.Duration
	// RetryMax caps a retry's delay; at least RetryBase. Defaults to
	// [RetryMaxDefault] (5 minutes).
	RetryMax time.Duration
	// MarkDelay is how long acknowledgements are collected before one
	// statement marks them published; they are marked sooner when every
	// event the relay holds has its outcome. Defaults to [MarkDelayDefault]
	// (5 milliseconds).
	MarkDelay time.Duration
	// BacklogMarkDelay replaces MarkDelay while the relay works through a
	// backlog (its last claim took all it asked for): there, an early mark
	// frees nothing anyone waits for (the claimer has more events than room)
	// and every mark is a commit on the database the sink may share, so
	// acknowledgements are collected longer and marked in fewer statements.
	// An aggregate's next event still waits for its predecessor's mark, at
	// most this long behind a backlog that delays it more. Defaults to
	// [BacklogMarkDelayDefault] (50 milliseconds).
	BacklogMarkDelay time.Duration
	// MarkBatchSize marks at once when this many acknowledgements are
	// waiting. Defaults to [MarkBatchSizeDefault] (64).
	MarkBatchSize int
	// GaugeInterval is how often the backlog gauges (outbox_pending_events,
	// outbox_oldest_pending_age_seconds, outbox_quarantined_events) are
	// recomputed; only when Registerer is set. At least 10ms. Defaults to
	// [GaugeIntervalDefault] (15 seconds).
	GaugeInterval time.Duration
	// Registerer receives the relay's metrics. Defaults to nil: metrics are
	// kept but not registered, and the gauge query never runs. Several relays
	// may share one Registerer; they then share the collectors.
	Registerer prometheus.Registerer
	// Logger receives start-up, per-event error and listener logs. Defaults
	// to slog.Default().
	Logger *slog.Logger
	// Rate is the most publishes the relay starts a second (OUTFLOW_RELAY_RATE),
	// to stay under a sink's quota (a Temporal Cloud namespace's actions per
	// second) before it throttles. Defaults to 0: no ceiling. A throttled
	// publish (ErrThrottled) slows the relay down whatever Rate says.
	Rate float64
	// BreakerThreshold is how many publishes in a row may fail for the
	// sink's fault (ErrSinkUnavailable, see fault.go) before the relay stops
	// claiming and probes the sink. Defaults to [BreakerThresholdDefault]
	// (5).
	BreakerThreshold int
	// ProbeBase is the ceiling of the first delay before the relay probes a
	// sink that is down; later ceilings double up to ProbeMax (full jitter).
	// Defaults to [ProbeBaseDefault] (1 second).
	ProbeBase time.Duration
	// ProbeMax caps the delay between probes; at least ProbeBase. Defaults
	// to [ProbeMaxDefault] (30 seconds).
	ProbeMax time.Duration
	// Failpoints injects faults at relay.after_claim, relay.after_publish and
	// relay.before_mark_commit. Defaults to nil: none. The starter passes
	// failpoints.Parse(os.Getenv(failpoints.EnvVar)).
	Failpoints *failpoints.Set
	// TracerProvider makes the span of each publish, in the trace the event
	// was written in (Event.TraceContext): a first delivery and its
	// redeliveries are children of the enqueuing span, an operator's replay
	// a new trace linked to it (the reason is at startPublishSpan, in
	// trace.go). The publisher gets the span in its context and hands it on
	// downstream. Defaults to otel's global provider (a no-op until a main
	// sets one).
	TracerProvider trace.TracerProvider
	// Propagator reads Event.TraceContext. Defaults to otel's global
	// propagator.
	Propagator propagation.TextMapPropagator

	// Source is the relay's source: "" (the default) follows the one the
	// database records (outbox_source, where the producers' [Enqueue]
	// reads it too; `outboxctl source set` changes it) and switches when
	// an operator changes it. "poll", "cdc" or "log" reads that source
	// alone and never switches: for tests and benchmarks of one source,
	// since the producers keep writing where the database says.
	Source string
	// CDCSlot, CDCPublication, CDCGrace, CDCStatusInterval and
	// CDCStandbyRetry tune the cdc source: its replication slot (created
	// when missing) and publication, how old an unpublished event must be
	// before the sweeper takes it without the stream's hand, how often the
	// stream confirms its position, and how long a relay waits to try the
	// slot again when another streams it. Defaults: the slot and the
	// publication outflow_outbox (outboxops.CDCSlotDefault and
	// CDCPublicationDefault; Migrate makes that publication), 10s, 1s and 2s;
	// the durations at least 10ms.
	CDCSlot, CDCPublication                      string
	CDCGrace, CDCStatusInterval, CDCStandbyRetry time.Duration
	// LogMaxPartitions is the most of the log source's [LogPartitions]
	// this relay reads at once (default all; the live relays share them
	// evenly), LogShareDelay how long it must hold more than its share
	// before it gives a partition back (default the Lease).
	LogMaxPartitions int
	LogShareDelay    time.Duration
	// Started, when set, hears each source's relay as it starts, with the
	// source and the relay's configuration (defaults applied): a process
	// logs it.
	Started func(source string, cfg RelayConfig)
}

func (c *RelayConfig) setDefaults() error {
	if c.Owner == "" {
		owner, err := newOwner()
		if err != nil {
			return err
		}
		c.Owner = owner
	}
	c.BatchSize = cmp.Or(c.BatchSize, BatchSizeDefault)
	c.Lease = cmp.Or(c.Lease, LeaseDefault)
	// After Lease: the default follows the lease actually used.
	c.PublishTimeout = cmp.Or(c.PublishTimeout, min(PublishTimeoutDefault, c.Lease/2))
	c.MaxInFlight = cmp.Or(c.MaxInFlight, MaxInFlightDefault)
	c.PollInterval = cmp.Or(c.PollInterval, PollIntervalDefault)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, MaxAttemptsDefault)
	c.RetryBase = cmp.Or(c.RetryBase, RetryBaseDefault)
	c.RetryMax = cmp.Or(c.RetryMax, RetryMaxDefault)
	c.MarkDelay = cmp.Or(c.MarkDelay, MarkDelayDefault)
	c.BacklogMarkDelay = cmp.Or(c.BacklogMarkDelay, max(BacklogMarkDelayDefault, c.MarkDelay))
	c.MarkBatchSize = cmp.Or(c.MarkBatchSize, MarkBatchSizeDefault)
	c.GaugeInterval = cmp.Or(c.GaugeInterval, GaugeIntervalDefault)
	c.BreakerThreshold = cmp.Or(c.BreakerThreshold, BreakerThresholdDefault)
	c.ProbeBase = cmp.Or(c.ProbeBase, ProbeBaseDefault)
	c.ProbeMax = cmp.Or(c.ProbeMax, max(ProbeMaxDefault, c.ProbeBase))
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return nil
}

func (c *RelayConfig) validate() error {
	switch {
	case len(c.Owner) > ownerMaxLen:
		return fmt.Errorf("outbox: RelayConfig.Owner is %d bytes; keep it under %d", len(c.Owner), ownerMaxLen)
	case c.BatchSize < 1 || c.BatchSize > batchSizeMax:
		return fmt.Errorf("outbox: RelayConfig.BatchSize %d is out of range; use 1 to %d (default %d)", c.BatchSize, batchSizeMax, BatchSizeDefault)
	case c.Lease < leaseMin:
		return fmt.Errorf("outbox: RelayConfig.Lease %s is too short; use at least %s (default %s)", c.Lease, leaseMin, LeaseDefault)
	case c.PublishTimeout <= 0 || c.PublishTimeout > c.Lease/2:
		return fmt.Errorf("outbox: RelayConfig.PublishTimeout %s must be positive and at most half of RelayConfig.Lease %s, so every publish ends well before its lease can be taken over; lower PublishTimeout or raise Lease",
			c.PublishTimeout, c.Lease)
	case c.Source != "" && c.Source != "poll" && c.Source != "cdc" && c.Source != "log":
		return fmt.Errorf("outbox: RelayConfig.Source %q is not a source; use \"\" (follow the database's record), poll, cdc or log", c.Source)
	case c.MaxInFlight < 1:
		return fmt.Errorf("outbox: RelayConfig.MaxInFlight %d must be at least 1 (default %d)", c.MaxInFlight, MaxInFlightDefault)
	case c.PollInterval < pollIntervalMin:
		return fmt.Errorf("outbox: RelayConfig.PollInterval %s is too short; use at least %s (default %s)", c.PollInterval, pollIntervalMin, PollIntervalDefault)
	case c.MaxAttempts < 1:
		return fmt.Errorf("outbox: RelayConfig.MaxAttempts %d must be at least 1 (default %d)", c.MaxAttempts, MaxAttemptsDefault)
	case c.RetryBase < 0 || c.RetryMax < c.RetryBase:
		return fmt.Errorf("outbox: RelayConfig.RetryBase %s and RetryMax %s must satisfy 0 <= RetryBase <= RetryMax (defaults %s and %s)",
			c.RetryBase, c.RetryMax, RetryBaseDefault, RetryMaxDefault)
	case c.MarkDelay < 0:
		return fmt.Errorf("outbox: RelayConfig.MarkDelay %s must not be negative (default %s)", c.MarkDelay, MarkDelayDefault)
	case c.BacklogMarkDelay < c.MarkDelay:
		return fmt.Errorf("outbox: RelayConfig.BacklogMarkDelay %s must be at least MarkDelay %s (default %s)", c.BacklogMarkDelay, c.MarkDelay, BacklogMarkDelayDefault)
	case c.MarkBatchSize < 1:
		return fmt.Errorf("outbox: RelayConfig.MarkBatchSize %d must be at least 1 (default %d)", c.MarkBatchSize, MarkBatchSizeDefault)
	case c.Rate < 0:
		return fmt.Errorf("outbox: RelayConfig.Rate %g must not be negative (0: no ceiling)", c.Rate)
	case c.BreakerThreshold < 1:
		return fmt.Errorf("outbox: RelayConfig.BreakerThreshold %d must be at least 1 (default %d)", c.BreakerThreshold, BreakerThresholdDefault)
	case c.ProbeBase <= 0 || c.ProbeMax < c.ProbeBase:
		return fmt.Errorf("outbox: RelayConfig.ProbeBase %s and ProbeMax %s must satisfy 0 < ProbeBase <= ProbeMax (defaults %s and %s)",
			c.ProbeBase, c.ProbeMax, ProbeBaseDefault, ProbeMaxDefault)
	case c.GaugeInterval < gaugeIntervalMin:
		return fmt.Errorf("outbox: RelayConfig.GaugeInterval %s is too short; use at least %s (default %s)", c.GaugeInterval, gaugeIntervalMin, GaugeIntervalDefault)
	}
	return nil
}
