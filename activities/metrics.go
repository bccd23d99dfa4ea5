package activities

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the activities' Prometheus metrics.
type Metrics struct {
	// InboxDuplicates counts deliveries the inbox acknowledged without
	// effect, by consumer (CONTRACT.md: inbox_duplicates_total{consumer}).
	// A steady rate is normal (at-least-once delivery); a spike means a
	// redelivery storm upstream.
	InboxDuplicates *prometheus.CounterVec
}

// NewMetrics creates the activities' metrics and registers them on reg (nil:
// registered nowhere, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		InboxDuplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inbox_duplicates_total",
			Help: "Event deliveries the inbox (processed_events) acknowledged without effect, by consumer.",
		}, []string{"consumer"}),
	}
	if reg != nil {
		reg.MustRegister(m.InboxDuplicates)
	}
	return m
}

// defaultMetrics backs an Activities without Metrics, so a test that does
// not care about metrics needs no setup.
var defaultMetrics = NewMetrics(nil)
