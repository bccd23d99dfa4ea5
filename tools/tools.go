//go:build tools

// Package tools pins the command-line tools outflow builds from the Go module
// proxy, so the main go.mod stays lean: the Temporal CLI (dev server for tests
// and the demo).
package tools

import (
	_ "github.com/temporalio/cli/cmd/temporal"
)
