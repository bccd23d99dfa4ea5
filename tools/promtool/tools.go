//go:build tools

// Package promtool pins Prometheus's promtool, which unit-tests the alert
// rules in deploy/prometheus (`promtool test rules`). A module of its own:
// Prometheus's dependency graph is large and must not move outflow's.
package promtool

import (
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
