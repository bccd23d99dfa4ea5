package promreg_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/promreg"
)

// TestTwoComponentsShareOneCollector: the second registration of the same
// counter gets the first one back, so both count into one series; a
// collector of another shape under the same name is refused.
func TestTwoComponentsShareOneCollector(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "outflow_test_total", Help: "a test counter"}
	a, err := promreg.Register(reg, prometheus.NewCounter(opts))
	require.NoError(t, err)
	b, err := promreg.Register(reg, prometheus.NewCounter(opts))
	require.NoError(t, err)
	a.Inc()
	b.Inc()
	require.InDelta(t, 2, testutil.ToFloat64(a), 0)
	require.Same(t, a, b)

	_, err = promreg.Register(reg, prometheus.NewCounterVec(opts, []string{"kind"}))
	require.ErrorContains(t, err, "outflow_test_total")

	c, err := promreg.Register[prometheus.Counter](nil, prometheus.NewCounter(opts))
	require.NoError(t, err)
	c.Inc()
	require.InDelta(t, 1, testutil.ToFloat64(c), 0, "a nil registry: the collector counts for itself")
}

// TestRegisterAll: each collector is replaced by the one to use; the first
// refusal stops it.
func TestRegisterAll(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	first := prometheus.NewCounter(prometheus.CounterOpts{Name: "outflow_a_total", Help: "a"})
	require.NoError(t, promreg.RegisterAll(reg, &first))
	a := prometheus.NewCounter(prometheus.CounterOpts{Name: "outflow_a_total", Help: "a"})
	b := prometheus.NewCounter(prometheus.CounterOpts{Name: "outflow_b_total", Help: "b"})
	require.NoError(t, promreg.RegisterAll(reg, &a, &b))
	require.Same(t, first, a, "the collector already registered")

	clash := prometheus.NewCounter(prometheus.CounterOpts{Name: "outflow_b_total", Help: "other help"})
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "outflow_c_total", Help: "c"})
	require.ErrorContains(t, promreg.RegisterAll(reg, &clash, &c), "outflow_b_total")
	n, err := testutil.GatherAndCount(reg, "outflow_c_total")
	require.NoError(t, err)
	require.Zero(t, n, "nothing registered after the refusal")
}
