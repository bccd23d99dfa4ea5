package testclock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClockMovesOnlyWhenTold(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	c := New(start)
	require.Equal(t, start, c.Now())
	c.Advance(25 * time.Hour)
	require.Equal(t, start.Add(25*time.Hour), c.Now())
}
