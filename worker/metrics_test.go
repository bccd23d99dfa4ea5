package main

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// The adapter exports counters (with _total), gauges and timers (as
// histograms in seconds), keeps tags as labels, and tolerates a metric used
// later with another tag set.
func TestPromHandler(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h := newPromHandler(reg)

	tagged := h.WithTags(map[string]string{"workflow_type": "OrderCancelledWorkflow"})
	tagged.Counter("outflow_compensation_failures_total").Inc(1)
	tagged.Counter("outflow_compensation_failures_total").Inc(2)
	// Same metric, other tags: the missing label is "", the extra dropped.
	h.WithTags(map[string]string{"other": "x"}).Counter("outflow_compensation_failures_total").Inc(1)
	h.Gauge("temporal_worker_task_slots_available").Update(7)
	h.WithTags(map[string]string{"activity_type": "ChargePayment"}).Timer("temporal_activity_execution_latency").Record(1500 * time.Millisecond)
	h.Counter("temporal.request").Inc(1)

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP outflow_compensation_failures_total Temporal SDK / workflow counter outflow_compensation_failures_total.
# TYPE outflow_compensation_failures_total counter
outflow_compensation_failures_total{workflow_type=""} 1
outflow_compensation_failures_total{workflow_type="OrderCancelledWorkflow"} 3
# HELP temporal_request_total Temporal SDK / workflow counter temporal_request_total.
# TYPE temporal_request_total counter
temporal_request_total 1
# HELP temporal_worker_task_slots_available Temporal SDK gauge temporal_worker_task_slots_available.
# TYPE temporal_worker_task_slots_available gauge
temporal_worker_task_slots_available 7
`), "outflow_compensation_failures_total", "temporal_request_total", "temporal_worker_task_slots_available"))

	n, err := testutil.GatherAndCount(reg, "temporal_activity_execution_latency_seconds")
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// Two handlers on one registry share collectors instead of panicking.
func TestPromHandlerSharedRegistry(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	newPromHandler(reg).Counter("c").Inc(1)
	newPromHandler(reg).Counter("c").Inc(1)
	n, err := testutil.GatherAndCount(reg, "c_total")
	require.NoError(t, err)
	require.Equal(t, 1, n)
}
