package deploy

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	gfprometheus "github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

const dashboardFile = "grafana/outflow.json"

// dashboardJSON is what the checks below read of deploy/grafana/outflow.json.
type dashboardJSON struct {
	UID           string      `json:"uid"`
	Title         string      `json:"title"`
	SchemaVersion int         `json:"schemaVersion"`
	Panels        []panelJSON `json:"panels"`
	Templating    struct {
		List []struct {
			Type, Name, Query string
		} `json:"list"`
	} `json:"templating"`
}

type panelJSON struct {
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	ID         int             `json:"id"`
	Datasource *datasourceJSON `json:"datasource"`
	GridPos    struct{ H, W, X, Y int }
	Targets    []struct {
		RefID      string          `json:"refId"`
		Expr       string          `json:"expr"`
		Datasource *datasourceJSON `json:"datasource"`
	} `json:"targets"`
	Panels []panelJSON `json:"panels"`
}

type datasourceJSON struct{ Type, UID string }

func loadDashboard(t *testing.T) dashboardJSON {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var d dashboardJSON
	require.NoError(t, json.Unmarshal(b, &d))
	return d
}

// panels are the dashboard's panels, rows' nested ones included, rows not.
func (d dashboardJSON) panels() []panelJSON {
	var out []panelJSON
	for _, p := range d.Panels {
		if p.Type == "row" {
			out = append(out, p.Panels...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// TestDashboardIsAGrafanaDashboard: the JSON decodes strictly (every field
// known, every type right, every panel's options and every query as the
// panel and datasource plugins define them) into the Grafana Foundation
// SDK's dashboard model, and passes its validation.
func TestDashboardIsAGrafanaDashboard(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	b, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	// The v1 model is what Grafana provisions from files (the SDK prefers
	// its v2, a schema behind a Grafana feature flag).
	//lint:ignore SA1019 Grafana's file provisioning reads v1 dashboards
	var d dashboard.Dashboard
	require.NoError(t, buildErr(d.UnmarshalJSONStrict(b)), "%s is not a Grafana dashboard", dashboardFile)
	// The strict decoder checks but drops what decoded without error (the
	// SDK's typed nil error): the ordinary decoder fills the model.
	//lint:ignore SA1019 as above
	d = dashboard.Dashboard{}
	require.NoError(t, json.Unmarshal(b, &d))
	require.NoError(t, buildErr(d.Validate()))
	require.NotNil(t, d.Uid)
	require.Equal(t, "outflow", *d.Uid, "the URL /d/outflow and the provisioning keep this uid")
	queries := 0
	for _, p := range d.Panels {
		if p.Panel == nil {
			continue
		}
		for _, q := range p.Panel.Targets {
			pq, ok := q.(*gfprometheus.Dataquery)
			require.True(t, ok, "panel %q: a %T, not a Prometheus query", *p.Panel.Title, q)
			require.NotEmpty(t, pq.Expr)
			queries++
		}
	}
	require.Greater(t, queries, 10, "the SDK decoded the queries as Prometheus queries")
}

// buildErr is err, or nil for the SDK's empty list of errors (returned as a
// non-nil error interface).
func buildErr(err error) error {
	if be, ok := err.(cog.BuildErrors); ok && len(be) == 0 {
		return nil
	}
	return err
}

// TestDashboardStructure: every panel sits on the 24-column grid without
// overlapping another, queries the provisioned Prometheus through the
// dashboard's datasource variable, and the dashboard covers what an
// operator watches.
func TestDashboardStructure(t *testing.T) {
	d := loadDashboard(t)
	require.Equal(t, "outflow", d.UID)
	require.Greater(t, d.SchemaVersion, 30)
	require.Len(t, d.Templating.List, 2)
	v := d.Templating.List[0]
	require.Equal(t, "datasource", v.Type)
	require.Equal(t, "prometheus", v.Query)
	dsRef := "${" + v.Name + "}"
	// The outbox shown: every relay exports the same outbox_* series for
	// its own database (the starters', the inventory's), so each panel
	// reads one scrape job's, chosen by this variable.
	job := d.Templating.List[1]
	require.Equal(t, "query", job.Type)
	require.Equal(t, "job", job.Name)
	require.Equal(t, "label_values(outbox_pending_events, job)", job.Query)

	// The provisioned datasource is the variable's default.
	var prov struct {
		Datasources []struct{ Name, UID, Type, URL string }
	}
	b, err := os.ReadFile("grafana/provisioning/datasources/prometheus.yml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &prov))
	require.Len(t, prov.Datasources, 1)
	require.Equal(t, "prometheus", prov.Datasources[0].Type)
	require.Equal(t, "http://prometheus:9090", prov.Datasources[0].URL, "the compose service prometheus")
	raw, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"value": "`+prov.Datasources[0].UID+`"`, "the datasource variable defaults to the provisioned datasource")

	type cell struct{ x, y int }
	taken := map[cell]string{}
	ids := map[int]bool{}
	var all strings.Builder
	var walk func(ps []panelJSON)
	walk = func(ps []panelJSON) {
		for _, p := range ps {
			require.NotEmpty(t, p.Title, "panel %d has a title", p.ID)
			require.False(t, ids[p.ID], "panel id %d is unique", p.ID)
			ids[p.ID] = true
			g := p.GridPos
			require.True(t, g.W > 0 && g.H > 0 && g.X >= 0 && g.X+g.W <= 24, "panel %q on the grid: %+v", p.Title, g)
			for x := g.X; x < g.X+g.W; x++ {
				for y := g.Y; y < g.Y+g.H; y++ {
					other, dup := taken[cell{x, y}]
					require.False(t, dup, "panels %q and %q overlap", p.Title, other)
					taken[cell{x, y}] = p.Title
				}
			}
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			require.Contains(t, []string{"timeseries", "stat", "gauge", "table", "state-timeline", "bargauge"}, p.Type, "panel %q", p.Title)
			require.NotNil(t, p.Datasource, "panel %q names its datasource", p.Title)
			require.Equal(t, datasourceJSON{Type: "prometheus", UID: dsRef}, *p.Datasource, "panel %q", p.Title)
			require.NotEmpty(t, p.Targets, "panel %q queries something", p.Title)
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.RefID)
				require.False(t, refs[tg.RefID], "panel %q: refId %s twice", p.Title, tg.RefID)
				refs[tg.RefID] = true
				require.NotEmpty(t, tg.Expr, "panel %q", p.Title)
				if tg.Datasource != nil {
					require.Equal(t, *p.Datasource, *tg.Datasource, "panel %q: a query on another datasource", p.Title)
				}
				all.WriteString(tg.Expr + "\n")
			}
		}
	}
	walk(d.Panels)

	// What the dashboard is for (README, "Docker"): each of these is
	// queried somewhere.
	for topic, metric := range map[string]string{
		"backlog":                    "outbox_pending_events",
		"oldest age":                 "outbox_oldest_pending_age_seconds",
		"publish rate":               "outbox_published_total",
		"publish errors":             "outbox_publish_errors_total",
		"handoff latency":            "outbox_handoff_latency_seconds_bucket",
		"quarantined":                "outbox_quarantined_events",
		"duplicates absorbed":        "outbox_duplicate_starts_total",
		"inbox duplicates":           "inbox_duplicates_total",
		"compensation failures":      "outflow_compensation_failures_total",
		"CDC slot lag":               "outbox_cdc_slot_lag_seconds",
		"retained WAL":               "outbox_cdc_wal_retained_bytes",
		"slot active":                "outbox_cdc_slot_active",
		"sink state":                 "outbox_sink_up",
		"throttles":                  "outbox_sink_throttled_total",
		"relays up (absence alerts)": `up{job="$job"}`,
	} {
		require.Contains(t, all.String(), metric, "the dashboard shows %s", topic)
	}
	for _, m := range regexp.MustCompile(`outbox_[a-z_]+(\{[^}]*\})?`).FindAllStringSubmatch(all.String(), -1) {
		require.True(t, strings.HasPrefix(m[1], `{job="$job"`), "%s reads the chosen job's outbox only", m[0])
	}
	require.Contains(t, all.String(), "sum by (fault) (rate(outbox_publish_errors_total",
		"the dashboard splits publish errors by whose fault they are")
}
