package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the relay's Prometheus collectors, named in docs/reference.md.
type metrics struct {
	published     prometheus.Counter
	publishErrors prometheus.Counter
	expiredLeases prometheus.Counter
	handoff       prometheus.Histogram
	pending       prometheus.Gauge
	oldestAge     prometheus.Gauge
	quarantined   prometheus.Gauge
	sinkUp        prometheus.Gauge
	throttled     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_published_total",
			Help: "Outbox events acknowledged by the publisher and marked published by this process.",
		}),
		publishErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_publish_errors_total",
			Help: "Failed publishes, whoever's fault: the event's (retried with backoff or quarantined) or the sink's (retried without counting an attempt).",
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
	if reg == nil {
		return m, nil
	}
	// Several relays may share a registry: they then share its collectors.
	var err error
	reg1 := func(c prometheus.Counter) prometheus.Counter {
		if err == nil {
			c, err = register(reg, c)
		}
		return c
	}
	regG := func(g prometheus.Gauge) prometheus.Gauge {
		if err == nil {
			g, err = register(reg, g)
		}
		return g
	}
	m.published, m.publishErrors, m.expiredLeases = reg1(m.published), reg1(m.publishErrors), reg1(m.expiredLeases)
	m.throttled = reg1(m.throttled)
	m.pending, m.oldestAge, m.quarantined = regG(m.pending), regG(m.oldestAge), regG(m.quarantined)
	m.sinkUp = regG(m.sinkUp)
	if err == nil {
		m.handoff, err = register(reg, m.handoff)
	}
	if err != nil {
		return nil, fmt.Errorf("outbox: register metrics: %w", err)
	}
	return m, nil
}

// register registers c, or returns the collector of the same description
// already registered.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, err
}

// refreshGauges recomputes the backlog gauges with one bounded query.
func (r *Relay) refreshGauges(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	g, err := qRelayGauges.one(ctx, r.pool, noArgs{})
	if err != nil {
		return err
	}
	r.metrics.pending.Set(float64(g.Pending))
	r.metrics.oldestAge.Set(g.OldestPendingAgeSeconds)
	r.metrics.quarantined.Set(float64(g.Quarantined))
	return nil
}
