package testsuite

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/outflow/outflow/internal/dev/jaeger"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
)

// TestTheDemosTraceLinkResolves: what make demo does for its trace links,
// against the real Jaeger it runs (bin/jaeger, OUTFLOW_JAEGER) and real
// OTLP over HTTP from the binaries, by the standard OTEL_* variables only.
// A span of the order's own (the demo's, service outflow-demo) is the
// parent of its create and its cancel; Jaeger's API then returns, under
// that span's trace id (the link the demo prints), the order API's
// requests, the starter's publish of both events, both workflows and the
// charge and the refund: the whole order, one trace.
func TestTheDemosTraceLinkResolves(t *testing.T) {
	t.Parallel()
	bin := os.Getenv(jaeger.BinEnv)
	require.NotEmpty(t, bin, "set %s to bin/jaeger (make test builds it: make bin/jaeger)", jaeger.BinEnv)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	j, err := jaeger.Start(ctx, jaeger.Options{Bin: bin, Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(j.Stop)

	s := NewStack(t)
	otel := []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + j.OTLPEndpoint(), "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_TRACES_SAMPLER=always_on",
	}
	s.OrderAPIEnv, s.RelayEnv, s.WorkerEnv = otel, otel, otel
	for _, p := range []string{"orderapi", "starter", "worker"} {
		s.Start(p, "")
	}

	// The demo's span of the order (cmd/demo's orderSpan), exported to
	// the same Jaeger.
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(j.OTLPEndpoint()+"/v1/traces"))
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "outflow-demo"))))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	octx, span := tp.Tracer("testsuite").Start(ctx, "demo order: cancel after confirmation")
	traceID := span.SpanContext().TraceID().String()

	order, err := s.API().Create(octx, "jaeger-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, WaitStatus(ctx, s, order.OrderID, "confirmed", 2*time.Minute))
	require.NoError(t, s.API().Cancel(octx, order.OrderID))
	require.NoError(t, WaitStatus(ctx, s, order.OrderID, "cancelled", 2*time.Minute))
	span.End()

	want := []string{
		"outflow-demo demo order: cancel after confirmation",
		"outflow-orderapi POST /orders", // the create's server span
		"outflow-orderapi POST /orders/{id}/cancel",
		"outflow-starter outbox publish OrderCreated",
		"outflow-starter outbox publish OrderCancelled",
		"outflow-worker RunWorkflow:OrderCreatedWorkflow",
		"outflow-worker RunWorkflow:OrderCancelledWorkflow",
		"outflow-worker RunActivity:ChargePayment",
		"outflow-worker RunActivity:RefundPayment",
	}
	var got []string // the trace's spans at the last look
	err = ports.Poll(ctx, "the order's trace in Jaeger", 60*time.Second, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		spans, err := jaeger.Trace(ctx, j.URL(), traceID)
		if err != nil {
			return false, err
		}
		var missing []string
		got = got[:0]
		for _, sp := range spans {
			got = append(got, sp.Service+" "+sp.Name)
		}
		for _, w := range want {
			if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
				missing = append(missing, w)
			}
		}
		if len(missing) > 0 {
			return false, fmt.Errorf("missing %s among %d spans", strings.Join(missing, "; "), len(spans))
		}
		return true, nil
	})
	require.NoError(t, err, "%s holds:\n%s", j.APIURL(traceID), strings.Join(got, "\n"))
	require.Equal(t, fmt.Sprintf("%s/trace/%s", j.URL(), traceID), j.TraceURL(traceID))

	// The demo's link opens its page of the trace (jaeger.Viewer): every
	// span of the order on it, each under its parent.
	viewer := httptest.NewServer(jaeger.Viewer(j.URL()))
	t.Cleanup(viewer.Close)
	resp, err := http.Get(jaeger.TraceURL(viewer.URL, traceID))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	page := html.UnescapeString(string(body))
	for _, w := range want {
		svc, name, _ := strings.Cut(w, " ")
		require.Regexp(t, `(?s)<td class="name">[\x{a0}]*`+regexp.QuoteMeta(name)+`[^<]*</td>\s*<td class="svc">`+regexp.QuoteMeta(svc)+`</td>`, page, "the trace's page shows %s", w)
	}

	// And in a real browser: the page the demo's link opens shows the
	// whole order, one trace (docs/img/trace.png with -screenshots).
	bctx, cancelTab := chromedp.NewContext(browser(t, ctx))
	defer cancelTab()
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(jaeger.TraceURL(viewer.URL, traceID))))
	waitText(t, bctx, "trace "+traceID)
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("tr.span")].map(r =>
		r.querySelector("td.svc").innerText + " " + r.querySelector("td.name").innerText.trim())`))
	require.NoError(t, err)
	for _, w := range want {
		require.True(t, slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, w) }),
			"the browser shows %s among:\n%s", w, strings.Join(rows, "\n"))
	}
	fullShot(t, bctx, "trace.png")
}
