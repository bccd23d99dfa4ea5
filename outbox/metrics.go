package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/promreg"
)

// metrics are the relay's Prometheus collectors, named in docs/reference.md.
type metrics struct {
	published prometheus.Counter
	// publishErrors is outbox_publish_errors_total by fault (event, sink,
	// throttle), indexed by [fault].
	publishErrors [faultCount]prometheus.Counter
	expiredLeases prometheus.Counter
	handoff       prometheus.Histogram
	pending       prometheus.Gauge
	oldestAge     prometheus.Gauge
	quarantined   prometheus.Gauge
	sinkUp        prometheus.Gauge
	throttled     prometheus.Counter
}

// newMetrics makes the relay's collectors and registers them on reg; the
// backlog gauges of outbox_events (pending, oldestAge, quarantined) only
// when backlog is set: a log relay has its own (log_metrics.go), and
// registering these it never refreshes would export a backlog of 0.
func newMetrics(reg prometheus.Registerer, backlog bool) (*metrics, error) {
	m := &metrics{
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_published_total",
			Help: "Outbox events acknowledged by the publisher and marked published by this process.",
		}),
		expiredLeases: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_expired_leases_total",
			Help: "Claims that took over another relay's expired lease (a relay died or stalled holding it).",
		}),
		handoff: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "outbox_handoff_latency_seconds",
			Help:    "Time from the event's commit (occurred_at) to the publisher's acknowledgement.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 17), // 5ms .. ~5.5min
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_pending_events",
			Help: "Unpublished, unquarantined outbox events (refreshed periodically).",
		}),
		oldestAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_oldest_pending_age_seconds",
			Help: "Age of the oldest unpublished, unquarantined event (refreshed periodically).",
		}),
		quarantined: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_quarantined_events",
			Help: "Quarantined events waiting for an operator (refreshed periodically).",
		}),
		sinkUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_sink_up",
			Help: "1 while the relay's sink answers, 0 while its breaker is open (the relay probes the sink and claims nothing).",
		}),
		throttled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_sink_throttled_total",
			Help: "Publishes the sink refused for load (ResourceExhausted): retried later without counting an attempt, and the relay publishes fewer at once.",
		}),
	}
	errorsVec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "outbox_publish_errors_total",
		Help: "Failed publishes by whose fault: fault=\"event\" (the event's own: an attempt counted, backoff, quarantine), \"sink\" (unreachable, Unavailable, DeadlineExceeded, Internal, a publish cut by the relay's deadline or shutdown: no attempt counted) or \"throttle\" (ResourceExhausted: no attempt counted, the relay slows down).",
	}, []string{"fault"})
	// Several relays may share a registry: they then share its collectors.
	err := promreg.RegisterAll(reg, &m.published, &m.expiredLeases, &m.throttled)
	if err == nil {
		err = promreg.RegisterAll(reg, &errorsVec)
	}
	if err == nil && backlog {
		err = promreg.RegisterAll(reg, &m.pending, &m.oldestAge, &m.quarantined)
	}
	if err == nil {
		err = promreg.RegisterAll(reg, &m.sinkUp)
	}
	if err == nil {
		err = promreg.RegisterAll(reg, &m.handoff)
	}
	if err != nil {
		return nil, fmt.Errorf("outbox: register metrics: %w", err)
	}
	m.byFault(errorsVec)
	return m, nil
}

// byFault takes the publish error counters of every fault from vec: each
// exists from the start, at 0, so that a rate by fault has a series before
// the first error of its kind.
func (m *metrics) byFault(vec *prometheus.CounterVec) {
	for f := range faultCount {
		m.publishErrors[f] = vec.WithLabelValues(f.String())
	}
}

// refreshGauges recomputes the backlog gauges with one bounded query.
func (r *pollRelay) refreshGauges(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	g, err := qRelayGauges.One(ctx, r.pool, namedsql.NoArgs{})
	if err != nil {
		return err
	}
	r.metrics.pending.Set(float64(g.Pending))
	r.metrics.oldestAge.Set(g.OldestPendingAgeSeconds)
	r.metrics.quarantined.Set(float64(g.Quarantined))
	return nil
}
