package activities

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outflow/outflow/outbox/promreg"
)

// Metrics are the activities' own Prometheus metrics. Inbox duplicates
// (inbox_duplicates_total{consumer}) are the inbox's: see [Activities.Inbox].
type Metrics struct {
	// IllegalTransitions counts projection steps refused because the
	// order's status does not allow them, by step
	// (outflow_illegal_transitions_total{step}). Any increase is a bug or a
	// run that should not exist (a replayed payment run on a cancelled
	// order): each one is also logged at error level, for an operator.
	IllegalTransitions *prometheus.CounterVec
	// Disputes counts disputes the provider opened on an order's charge
	// (charge.dispute.created), each Stripe webhook once
	// (outflow_disputes_total). Any increase needs an operator: alert
	// PaymentDisputeOpened.
	Disputes prometheus.Counter
}

// NewMetrics creates the activities' metrics and registers them on reg (nil:
// registered nowhere, for tests). A second worker's activities on the same
// reg share the first one's collectors; a collector of another shape under
// one of their names is an error.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		IllegalTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "outflow_illegal_transitions_total",
			Help: "Order projection steps refused because the order's status does not allow them, by step.",
		}, []string{"step"}),
		Disputes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outflow_disputes_total",
			Help: "Disputes the payment provider opened on an order's charge (charge.dispute.created), each webhook once.",
		}),
	}
	var err error
	if m.IllegalTransitions, err = promreg.Register(reg, m.IllegalTransitions); err != nil {
		return nil, fmt.Errorf("activities: %w", err)
	}
	if m.Disputes, err = promreg.Register(reg, m.Disputes); err != nil {
		return nil, fmt.Errorf("activities: %w", err)
	}
	return m, nil
}

// defaultMetrics backs an Activities without Metrics, so a test that does
// not care about metrics needs no setup.
var defaultMetrics = func() *Metrics {
	m, _ := NewMetrics(nil) // nothing to register: cannot fail
	return m
}()
