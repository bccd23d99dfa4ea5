package testsuite

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPoisonViolationsOfOversizedEvents: every oversized event must be
// quarantined as its own fault (for its size, or, under the soak's kills
// and load, for its relays' deaths or overdue publishes) and skipped.
func TestPoisonViolationsOfOversizedEvents(t *testing.T) {
	base := Journal{LaterEvents: 1, LaterReplayed: 1, LaterRedelivered: 1, OversizedEvents: 4, OversizedSkipped: 4}
	for _, c := range []struct {
		name      string
		bySize    int
		abandoned int
		ok        bool
	}{
		{"all for their size", 4, 0, true},
		{"some for their relays' deaths", 3, 1, true},
		{"none for its size", 0, 4, true},
		{"one never quarantined", 2, 1, false},
		{"one neither", 3, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := base
			j.OversizedQuarantined = map[string]int{"Temporal": c.bySize}
			j.OversizedAbandoned = c.abandoned
			if c.ok {
				require.Empty(t, j.poisonViolations())
			} else {
				require.Len(t, j.poisonViolations(), 1)
			}
		})
	}
}
