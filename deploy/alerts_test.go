package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	promql "github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

// ruleFiles are the alert rule files prometheus/prometheus.yml loads: the
// outbox library's (a service embedding the outbox loads it alone) and the
// example order service's.
var ruleFiles = []string{"prometheus/outbox-alerts.yml", "prometheus/orders-alerts.yml"}

// ruleGroups parses file with Prometheus's rule-file loader (which also
// validates each rule).
func ruleGroups(t *testing.T, file string) []rulefmt.RuleGroup {
	t.Helper()
	rgs, errs := rulefmt.ParseFile(file, false, model.UTF8Validation, promql.NewParser(promql.Options{}), nil)
	require.Empty(t, errs, file)
	return rgs.Groups
}

// runbookBase is where every alert's runbook_url points: docs/operations.md
// as the repository's web view renders it.
const runbookBase = "https://github.com/outflow/outflow/blob/main/docs/operations.md#"

// headingAnchors are the anchors GitHub gives the headings of a Markdown
// file: lower case, spaces to '-', punctuation other than '-' and '_'
// dropped.
func headingAnchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	drop := regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
	anchors := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		anchors[a] = true
	}
	return anchors
}

// TestEveryAlertHasARunbook: every rule's runbook_url points at a section
// of docs/operations.md that exists, named after the alert, and the
// runbook names the alert's metrics.
func TestEveryAlertHasARunbook(t *testing.T) {
	anchors := headingAnchors(t, "../docs/operations.md")
	require.True(t, anchors["runbooks"], "docs/operations.md has a Runbooks section")
	ops, err := os.ReadFile("../docs/operations.md")
	require.NoError(t, err)
	n := 0
	for _, file := range ruleFiles {
		for _, g := range ruleGroups(t, file) {
			for _, r := range g.Rules {
				url := r.Annotations["runbook_url"]
				require.NotEmpty(t, url, "%s has a runbook_url", r.Alert)
				require.True(t, strings.HasPrefix(url, runbookBase), "%s: %s points into docs/operations.md", r.Alert, url)
				anchor := strings.TrimPrefix(url, runbookBase)
				require.Equal(t, strings.ToLower(r.Alert), anchor, "%s's runbook is the section named after it", r.Alert)
				require.True(t, anchors[anchor], "%s: docs/operations.md has no heading with the anchor #%s", r.Alert, anchor)
				require.Contains(t, string(ops), "| `"+r.Alert+"` |", "%s is in the Alerts table of docs/operations.md", r.Alert)
				n++
			}
		}
	}
	require.Greater(t, n, 10)
}

// TestHeadingAnchors guards the slug rule the runbook check relies on.
func TestHeadingAnchors(t *testing.T) {
	f := t.TempDir() + "/x.md"
	require.NoError(t, os.WriteFile(f, []byte("# Operating outflow's outbox\n### The CDC slot: lag and retained WAL\n```\n# not a heading\n```\n### OutboxRelayDown\n"), 0o600))
	require.Equal(t, map[string]bool{"operating-outflows-outbox": true, "the-cdc-slot-lag-and-retained-wal": true, "outboxrelaydown": true},
		headingAnchors(t, f))
}

// TestOutboxRulesStandAlone: the outbox's rule file is one group, outbox,
// of Outbox* alerts that read only the relay's series (outbox_* and up)
// and select no job by name, so a team's relay under a job of its own name
// is covered without editing the rules; the order service's alerts are in
// the other file.
func TestOutboxRulesStandAlone(t *testing.T) {
	groups := ruleGroups(t, ruleFiles[0])
	require.Len(t, groups, 1)
	require.Equal(t, "outbox", groups[0].Name)
	p := promql.NewParser(promql.Options{})
	for _, r := range groups[0].Rules {
		require.True(t, strings.HasPrefix(r.Alert, "Outbox"), "%s is not an outbox alert: it belongs in %s", r.Alert, ruleFiles[1])
		ast, err := p.ParseExpr(r.Expr)
		require.NoError(t, err, r.Alert)
		promql.Inspect(ast, func(n promql.Node, _ []promql.Node) error {
			vs, ok := n.(*promql.VectorSelector)
			if !ok {
				return nil
			}
			require.True(t, vs.Name == "up" || strings.HasPrefix(vs.Name, "outbox_"), "%s reads %s, which no outbox relay exports", r.Alert, vs.Name)
			for _, m := range vs.LabelMatchers {
				require.NotEqual(t, "job", m.Name, "%s selects %s: the outbox's rules find relays by the outbox_relay label, never by a job's name", r.Alert, m)
			}
			return nil
		})
	}
	for _, g := range ruleGroups(t, ruleFiles[1]) {
		for _, r := range g.Rules {
			require.False(t, strings.HasPrefix(r.Alert, "Outbox"), "%s belongs in %s", r.Alert, ruleFiles[0])
		}
	}
}
