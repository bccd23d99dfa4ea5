package handoff_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
)

// TestDevServerRegistersOrderID: the dev servers the tests start register
// the order app's search attribute under its own name (the library's
// devserver cannot import handoff, so it spells the name itself).
func TestDevServerRegistersOrderID(t *testing.T) {
	t.Parallel()
	require.Equal(t, handoff.SearchAttributeOrderID, devserver.OrderIDAttribute)
}
