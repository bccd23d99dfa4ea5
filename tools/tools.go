//go:build tools

// Package tools pins the command-line tools outflow builds from the Go module
// proxy, so the main go.mod stays lean: the Temporal CLI (dev server for tests
// and the demo), and the Temporal server and its SQL schema tool (the
// two-node cluster on PostgreSQL of `make cluster` and
// OUTFLOW_TEST_TEMPORAL=cluster), and the Web UI server that `make cluster`
// points at it. The CLI v1.5.1 embeds go.temporal.io/server v1.29.1 and
// github.com/temporalio/ui-server/v2 v2.42.1, so all four come from one
// module graph: one go.sum, no replace directives, and the cluster runs the
// very server code the dev server runs.
package tools

import (
	_ "github.com/temporalio/cli/cmd/temporal"
	_ "github.com/temporalio/ui-server/v2/cmd/server"
	_ "go.temporal.io/server/cmd/server"
	_ "go.temporal.io/server/cmd/tools/sql"
)
