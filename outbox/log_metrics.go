package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/promreg"
)

// logMetrics are the log source's gauges, named in docs/reference.md. Its
// publishes count in the relay's own metrics (outbox_published_total,
// outbox_publish_errors_total, the handoff histogram, the breaker's).
type logMetrics struct {
	horizonAge  prometheus.Gauge
	pending     prometheus.Gauge
	oldestAge   prometheus.Gauge
	holds       prometheus.Gauge
	quarantined prometheus.Gauge
	// held and share are this relay's own, set as they change.
	held, share prometheus.Gauge
	ahead       prometheus.Gauge
}

func newLogMetrics(reg prometheus.Registerer) (*logMetrics, error) {
	m := &logMetrics{
		horizonAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_log_horizon_age_seconds",
			Help: "How long the oldest transaction on the server holding an xid has been open: the log source delivers nothing committed after it began until it ends (sampled periodically).",
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_log_pending_events",
			Help: "Committed log events after their partition's cursor, readable or waiting for the horizon (sampled periodically).",
		}),
		oldestAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_log_oldest_pending_age_seconds",
			Help: "Age of the oldest of the partitions' next events after their cursors: it grows while any partition stalls (sampled periodically).",
		}),
		holds: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_log_holds",
			Help: "Orders under a hold of the log source: a failed, isolated or replayed event's order (sampled periodically).",
		}),
		quarantined: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_log_quarantined_holds",
			Help: "Holds of the log source waiting for an operator (retry or skip; sampled periodically).",
		}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_log_partitions_held",
			Help: "Partitions of the log source this relay reads now.",
		}),
		share: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_log_partition_share",
			Help: "Partitions of the log source this relay should read: its even share among the live relays, as of its last look.",
		}),
		ahead: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_log_ranges_ahead",
			Help: "Range partitions of outbox_log made wholly beyond its sequence; at 0 enqueues to the log fail once the current range is full (sampled periodically).",
		}),
	}
	if err := promreg.RegisterAll(reg, &m.horizonAge, &m.pending, &m.oldestAge, &m.holds, &m.quarantined, &m.held, &m.share, &m.ahead); err != nil {
		return nil, fmt.Errorf("outbox: register the log source's metrics: %w", err)
	}
	return m, nil
}

// gaugeLoop refreshes the gauges every GaugeInterval until ctx ends.
func (r *logRelay) gaugeLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.GaugeInterval)
	defer t.Stop()
	for {
		if err := r.refreshGauges(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("outbox log relay: refreshing the gauges failed", "owner", r.cfg.Owner, "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *logRelay) refreshGauges(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	g, err := qLogGauges.One(ctx, r.pool, namedsql.NoArgs{})
	if err != nil {
		return err
	}
	r.metrics.horizonAge.Set(g.HorizonAgeSeconds)
	r.metrics.pending.Set(float64(g.Pending))
	r.metrics.oldestAge.Set(g.OldestPendingAge)
	r.metrics.holds.Set(float64(g.Holds))
	r.metrics.quarantined.Set(float64(g.Quarantined))
	r.metrics.ahead.Set(float64(g.RangesAhead))
	return nil
}
