package jaeger

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLayoutPutsEverySpanUnderItsParent(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	spans := []Span{ // as Jaeger returns them: in no particular order
		{Service: "outflow-worker", Name: "RunActivity:ChargePayment", SpanID: "c", ParentID: "w", Start: t0.Add(30 * time.Millisecond), Duration: 10 * time.Millisecond},
		{Service: "outflow-orderapi", Name: "POST /orders", SpanID: "a", ParentID: "root", Start: t0.Add(time.Millisecond), Duration: 5 * time.Millisecond,
			Attrs: map[string]string{"http.route": "/orders", "http.request.body.size": "145", "otel.scope.name": "otelhttp"}},
		{Service: "outflow-demo", Name: "demo order", SpanID: "root", Start: t0, Duration: 100 * time.Millisecond},
		{Service: "outflow-starter", Name: "outbox publish OrderCreated", SpanID: "p", ParentID: "a", Start: t0.Add(20 * time.Millisecond), Duration: 5 * time.Millisecond,
			Attrs: map[string]string{"outflow.event.id": "e1", "outflow.attempt": "1"}},
		{Service: "outflow-worker", Name: "RunWorkflow:OrderCreatedWorkflow", SpanID: "w", ParentID: "p", Start: t0.Add(25 * time.Millisecond), Duration: 50 * time.Millisecond},
		{Service: "outflow-worker", Name: "orphan", SpanID: "o", ParentID: "gone", Start: t0.Add(200 * time.Millisecond), Duration: 0},
	}
	p := layout("abc", spans)
	var got []string
	for _, r := range p.Rows {
		got = append(got, p.Indent(r.Depth)+r.Name)
	}
	in := func(d int) string { return p.Indent(d) }
	require.Equal(t, []string{
		"demo order",
		in(1) + "POST /orders",
		in(2) + "outbox publish OrderCreated",
		in(3) + "RunWorkflow:OrderCreatedWorkflow",
		in(4) + "RunActivity:ChargePayment",
		"orphan", // its parent is not in the trace: a root of its own
	}, got)
	require.Equal(t, 200*time.Millisecond, p.Total, "from the first start to the last end")
	require.Equal(t, []string{"outflow-demo", "outflow-orderapi", "outflow-starter", "outflow-worker"}, p.Services)
	require.Equal(t, []string{"outflow.attempt=1", "outflow.event.id=e1"}, p.Rows[2].AttrList)
	require.Equal(t, []string{"http.route=/orders"}, p.Rows[1].AttrList, "the instrumentation's bookkeeping is left out")
	require.InDelta(t, 15.0, p.Rows[4].Left, 1e-9, "the charge starts 30 ms into 200 ms")
	require.InDelta(t, 5.0, p.Rows[4].Width, 1e-9)
	require.InDelta(t, 0.3, p.Rows[5].Width, 1e-9, "a span of no duration still shows")
}
