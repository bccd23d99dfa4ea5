//go:build tools

// Package lint pins the linters `make lint` runs: staticcheck and Temporal's
// workflowcheck (non-determinism in workflow code). A module of its own so
// its dependencies never move the Temporal CLI's.
package lint

import (
	_ "go.temporal.io/sdk/contrib/tools/workflowcheck"
	_ "honnef.co/go/tools/cmd/staticcheck"
)
