package deploy

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	promql "github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/internal/routes"
	"github.com/outflow/outflow/orders/orderhttp"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/cmdkit"
	"github.com/outflow/outflow/outbox/inbox"
	"github.com/outflow/outflow/outbox/temporalpub"
	"github.com/outflow/outflow/workflows"
)

// prometheusSeries are the series Prometheus itself writes for every scrape
// target: what the absence alerts read.
var prometheusSeries = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped",
	"scrape_samples_post_metric_relabeling", "scrape_series_added"}

// registeredMetrics is every metric name outflow's binaries can export,
// built the way the binaries build their registries rather than listed by
// hand:
//   - the starter's: cmdkit.NewRegistry (Go runtime and process
//     collectors), a CDC relay (which holds the
//     polling relay's collectors too) and its temporalpub publisher, all
//     registering on one registry as outbox/relaycmd/run.go wires them;
//   - the worker's: the same base registry, the inbox's and the activities'
//     collectors, the saga's own counter (workflows.MetricCompensationFailures)
//     and the Temporal SDK's metrics, named as worker/metrics.go exports
//     them (counters name_total, timers name_seconds histograms) from the
//     SDK's own list of names (internal/common/metrics/constants.go of the
//     go.temporal.io/sdk this module builds with);
//   - the order API's: orderhttp's registry after one request.
//
// Collectors registered only in a package main (the starter's
// outbox_cleanup_deleted_total) cannot be built from here and are not in
// the set: a dashboard or alert naming one fails below until it moves into
// an importable package.
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, n := range prometheusSeries {
		names[n] = true
	}
	ctx := context.Background()

	// Nothing below connects: the pool and the Temporal client are lazy.
	pool, err := pgxpool.New(ctx, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(tc.Close)

	// The starter.
	starter := &recorder{Registry: cmdkit.NewRegistry()}
	pub, err := temporalpub.New(tc, client.Options{}, temporalpub.Config{Routes: routes.Orders(), Registerer: starter})
	require.NoError(t, err)
	_, err = outbox.NewRelay(pool, pub, outbox.RelayConfig{Registerer: starter, Source: "cdc"})
	require.NoError(t, err)
	// The log source (OUTFLOW_RELAY_SOURCE=log) registers its own gauges.
	_, err = outbox.NewRelay(pool, pub, outbox.RelayConfig{Registerer: starter, Source: "log"})
	require.NoError(t, err)
	starter.addTo(t, names)

	// The worker.
	worker := &recorder{Registry: cmdkit.NewRegistry()}
	_, err = inbox.New(worker)
	require.NoError(t, err)
	_, err = activities.NewMetrics(worker)
	require.NoError(t, err)
	worker.addTo(t, names)
	names[workflows.MetricCompensationFailures] = true
	for _, n := range sdkMetrics(t) {
		names[n] = true
	}

	// The order API: its collectors are vectors, exported once used.
	reg := prometheus.NewRegistry()
	h, err := orderhttp.New(orderhttp.Config{DB: pool, Registry: reg, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/healthz", nil))
	addGathered(t, reg, names)
	return names
}

// recorder is a registry that also keeps every collector registered on
// it, so that vectors without children yet (not gathered) still name
// their metrics.
type recorder struct {
	*prometheus.Registry
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// addTo adds the gathered families (each with its type), then the
// families of the collectors that exported nothing yet: vectors without
// children, whose concrete type says whether they are histograms or
// summaries.
func (r *recorder) addTo(t *testing.T, names map[string]bool) {
	t.Helper()
	gathered := addGathered(t, r.Registry, names)
	for _, c := range r.collectors {
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := fqName.FindStringSubmatch(d.String())
			require.NotNil(t, m, "descriptor %s", d)
			if gathered[m[1]] {
				continue
			}
			switch c.(type) {
			case *prometheus.HistogramVec:
				addFamily(names, m[1], dto.MetricType_HISTOGRAM)
			case *prometheus.SummaryVec:
				addFamily(names, m[1], dto.MetricType_SUMMARY)
			case *prometheus.CounterVec, *prometheus.GaugeVec:
				addFamily(names, m[1], dto.MetricType_GAUGE)
			default:
				t.Fatalf("%s (a %T) exported nothing when gathered: teach registeredMetrics its type", m[1], c)
			}
		}
	}
}

// addGathered adds every family g gathers and returns their names.
func addGathered(t *testing.T, g prometheus.Gatherer, names map[string]bool) map[string]bool {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	got := map[string]bool{}
	for _, mf := range mfs {
		addFamily(names, mf.GetName(), mf.GetType())
		got[mf.GetName()] = true
	}
	return got
}

// addFamily adds the series names a family of type typ exports.
func addFamily(names map[string]bool, name string, typ dto.MetricType) {
	switch typ {
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
	case dto.MetricType_SUMMARY:
		names[name], names[name+"_sum"], names[name+"_count"] = true, true, true
	default:
		names[name] = true
	}
}

// sdkMetrics are the Temporal SDK's metric names as the worker exports
// them (worker/metrics.go): every string constant of the SDK's metric
// names, a ...Counter as name_total, a ...Latency (a timer) as the
// histogram name_seconds, a ...Gauge as it is.
func sdkMetrics(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-json", "go.temporal.io/sdk").Output()
	require.NoError(t, err, "go list -m go.temporal.io/sdk")
	var mod struct{ Dir string }
	require.NoError(t, json.Unmarshal(out, &mod))
	require.NotEmpty(t, mod.Dir, "the SDK's module is not downloaded: go mod download")
	file := filepath.Join(mod.Dir, "internal", "common", "metrics", "constants.go")
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err)

	consts := map[string]string{} // identifier -> value
	var order []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if i < len(vs.Values) {
					if v, ok := constString(vs.Values[i], consts); ok {
						consts[id.Name] = v
						order = append(order, id.Name)
					}
				}
			}
		}
	}
	var names []string
	for _, id := range order {
		v := sanitize(consts[id])
		switch {
		case strings.HasSuffix(id, "Counter"):
			names = append(names, withSuffix(v, "_total"))
		case strings.HasSuffix(id, "Latency"):
			v = withSuffix(v, "_seconds")
			names = append(names, v+"_bucket", v+"_sum", v+"_count")
		case strings.HasSuffix(id, "Gauge"):
			names = append(names, v)
		}
	}
	require.Contains(t, names, "temporal_workflow_failed_total", "the SDK's metric names were not found in %s", file)
	return names
}

// constString evaluates a constant string expression: literals, earlier
// constants and + between them.
func constString(e ast.Expr, consts map[string]string) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.Ident:
		s, ok := consts[e.Name]
		return s, ok
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		l, ok1 := constString(e.X, consts)
		r, ok2 := constString(e.Y, consts)
		return l + r, ok1 && ok2
	case *ast.ParenExpr:
		return constString(e.X, consts)
	}
	return "", false
}

// sanitize and withSuffix are worker/metrics.go's naming.
var invalidChars = regexp.MustCompile(`[^a-zA-Z0-9_]`)

func sanitize(name string) string { return invalidChars.ReplaceAllString(name, "_") }

func withSuffix(name, suffix string) string {
	if strings.HasSuffix(name, suffix) {
		return name
	}
	return name + suffix
}

// grafanaVariables are the Grafana variables the dashboard's queries use,
// replaced by a duration before Prometheus's parser reads them (Grafana
// does the same before it sends a query).
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// metricNames parses expr with Prometheus's own PromQL parser and returns
// the metric names its selectors name.
func metricNames(t *testing.T, expr string) []string {
	t.Helper()
	p := promql.NewParser(promql.Options{})
	ast, err := p.ParseExpr(grafanaVariables.Replace(expr))
	require.NoError(t, err, "PromQL %q", expr)
	var names []string
	promql.Inspect(ast, func(n promql.Node, _ []promql.Node) error {
		if vs, ok := n.(*promql.VectorSelector); ok {
			name := vs.Name
			if name == "" {
				for _, m := range vs.LabelMatchers {
					if m.Name == model.MetricNameLabel {
						name = m.Value
					}
				}
			}
			require.NotEmpty(t, name, "a selector without a metric name in %q", expr)
			names = append(names, name)
		}
		return nil
	})
	require.NotEmpty(t, names, "%q selects no metric", expr)
	return names
}

// alertExprs are the expressions of every alert rule file (ruleFiles).
func alertExprs(t *testing.T) map[string]string {
	t.Helper()
	exprs := map[string]string{}
	for _, file := range ruleFiles {
		for _, g := range ruleGroups(t, file) {
			for _, r := range g.Rules {
				require.NotEmpty(t, r.Alert, "%s holds alerts only", file)
				exprs[r.Alert] = r.Expr
			}
		}
	}
	require.NotEmpty(t, exprs)
	return exprs
}

// TestRegisteredMetricsAreDerived: the derived set is not empty or
// trivially permissive, so the cross-check below can fail.
func TestRegisteredMetricsAreDerived(t *testing.T) {
	names := registeredMetrics(t)
	for _, want := range []string{
		"outbox_pending_events", "outbox_handoff_latency_seconds_bucket", "outbox_sink_up",
		"outbox_cdc_slot_active", "outbox_duplicate_starts_total", "inbox_duplicates_total",
		"outflow_illegal_transitions_total", "outflow_compensation_failures_total",
		"temporal_workflow_failed_total", "temporal_workflow_endtoend_latency_seconds_bucket",
		"orderapi_http_requests_total", "go_goroutines", "process_resident_memory_bytes", "up",
	} {
		require.True(t, names[want], "%s is registered by a binary", want)
	}
	for _, not := range []string{"outbox_pending_events_total", "outbox_handoff_latency_seconds", "outbox_sink_down"} {
		require.False(t, names[not], "%s is not a registered metric", not)
	}
}

// TestAlertAndDashboardMetricsAreRegistered: every PromQL expression of the
// alerts and of the Grafana dashboard parses, and names only metrics some
// binary registers.
func TestAlertAndDashboardMetricsAreRegistered(t *testing.T) {
	names := registeredMetrics(t)
	check := func(where, expr string) {
		for _, n := range metricNames(t, expr) {
			require.True(t, names[n], "%s names %s, which no outflow binary registers (see registeredMetrics)", where, n)
		}
	}
	alerts := alertExprs(t)
	for name, expr := range alerts {
		check("alert "+name, expr)
	}
	d := loadDashboard(t)
	n := 0
	for _, p := range d.panels() {
		for _, tg := range p.Targets {
			check("dashboard panel "+strconv.Quote(p.Title), tg.Expr)
			n++
		}
	}
	require.Greater(t, n, 10, "the dashboard's queries were read")
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range alerts {
			if !yield(k) {
				return
			}
		}
	})
	t.Logf("checked %d dashboard queries and %d alerts (%s)", n, len(keys), strings.Join(keys, ", "))
}

// TestMetricNamesRejectsUnknown: the cross-check's parser finds the metric
// of a misspelt query (guards the helper, not the files).
func TestMetricNamesRejectsUnknown(t *testing.T) {
	require.Equal(t, []string{"outbox_pending_event", "up"},
		metricNames(t, `max(outbox_pending_event) > 0 or absent(up{job="x"})`))
	require.Equal(t, []string{"outbox_handoff_latency_seconds_bucket"},
		metricNames(t, `histogram_quantile(0.9, sum by (le) (rate(outbox_handoff_latency_seconds_bucket[$__rate_interval])))`))
}
