package activities

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outflow/outflow/internal/promreg"
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
	}
	var err error
	if m.IllegalTransitions, err = promreg.Register(reg, m.IllegalTransitions); err != nil {
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
