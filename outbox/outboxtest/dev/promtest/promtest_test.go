package promtest_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
)

func TestValues(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outflow_test_total", Help: "h"}, []string{"kind", "table"})
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "outflow_test_gauge", Help: "h"})
	hist := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "outflow_test_seconds", Help: "h"})
	reg.MustRegister(vec, gauge, hist)
	vec.WithLabelValues("a", "events").Add(2)
	vec.WithLabelValues("b", "events").Add(3)
	vec.WithLabelValues("a", "inbox").Add(5)
	gauge.Set(7)
	hist.Observe(1)
	hist.Observe(2)

	require.InDelta(t, 10, promtest.Value(t, reg, "outflow_test_total"), 0, "summed over the series")
	require.InDelta(t, 5, promtest.Value(t, reg, "outflow_test_total", "table", "events"), 0)
	require.InDelta(t, 2, promtest.Value(t, reg, "outflow_test_total", "table", "events", "kind", "a"), 0)
	require.InDelta(t, 7, promtest.Value(t, reg, "outflow_test_gauge"), 0)
	require.InDelta(t, 2, promtest.Value(t, reg, "outflow_test_seconds"), 0, "a histogram's sample count")

	require.Zero(t, promtest.Total(t, reg, "outflow_test_total", "kind", "c"), "no series: 0")
	v, err := promtest.Sum(reg, "outflow_test_gauge")
	require.NoError(t, err)
	require.InDelta(t, 7, v, 0)
	_, err = promtest.Sum(reg, "outflow_missing_total")
	require.ErrorContains(t, err, "no series outflow_missing_total")
	_, err = promtest.Sum(reg, "outflow_test_total", "kind")
	require.ErrorContains(t, err, "pairs")
}
