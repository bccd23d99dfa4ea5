package main

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVerdict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		m    metric
		want string
	}{
		{metric{value: 0.9, target: atLeast(0.9)}, "PASS"}, // the boundary meets the target
		{metric{value: 0.89, target: atLeast(0.9)}, "MISS"},
		{metric{value: 1.3, target: atMost(1.3)}, "PASS"},
		{metric{value: 1.31, target: atMost(1.3)}, "MISS"},
		{metric{value: math.NaN(), target: atMost(1.3)}, "n/a"},
		{metric{value: math.NaN(), target: atLeast(0.9)}, "n/a"},
		{metric{value: 42}, "—"},
	} {
		require.Equal(t, tc.want, tc.m.verdict(), "%+v", tc.m)
	}
	require.Equal(t, "≥ 5000", atLeast(5000).String())
	require.Equal(t, "≤ 1.5", atMost(1.5).String())
}

func TestReport(t *testing.T) {
	t.Parallel()
	var lines, table strings.Builder
	r := &report{w: &lines}
	r.add(metric{name: "bare_start_per_s", value: 812.4})
	r.add(metric{name: "handoff_ratio", value: 0.912, decimals: 2, target: atLeast(0.9)})
	r.add(metric{name: "claim_scale_ratio", value: 1.62, decimals: 2, target: atMost(1.5)})
	r.add(metric{name: "idle_queries_per_s", value: math.NaN(), decimals: 2, target: atMost(1)})
	r.note("  method one ")
	require.Equal(t, "bare_start_per_s: 812\nhandoff_ratio: 0.91\nclaim_scale_ratio: 1.62\nidle_queries_per_s: n/a\n",
		lines.String(), "each figure is printed as it is added")

	r.writeTable(&table)
	require.Equal(t, `
| metric | value | target | verdict |
|---|---:|---|---|
| bare_start_per_s | 812 | — | — |
| handoff_ratio | 0.91 | ≥ 0.9 | PASS |
| claim_scale_ratio | 1.62 | ≤ 1.5 | MISS |
| idle_queries_per_s | n/a | ≤ 1 | n/a |

- method one
`, table.String())
	require.Equal(t, []string{"claim_scale_ratio", "idle_queries_per_s"}, r.missed())
}
