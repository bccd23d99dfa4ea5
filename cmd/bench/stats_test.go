package main

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPerSecond(t *testing.T) {
	t.Parallel()
	require.InDelta(t, 500.0, perSecond(1000, 2*time.Second), 1e-9)
	require.True(t, math.IsNaN(perSecond(10, 0)))
}
