package schemaset

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLegacySequence: only versions 1..N of outflow's old sequence, N at
// most 10, are taken for a legacy outflow database; a team's versions in
// goose_db_version (timestamps, a gap, more than outflow ever had) are not.
func TestLegacySequence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		versions []int64
		n        int64
		ok       bool
	}{
		{[]int64{1}, 1, true},
		{[]int64{1, 2, 3, 4, 5, 6}, 6, true},
		{[]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 10, true},
		{nil, 0, false},
		{[]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0, false},
		{[]int64{2, 3}, 0, false},
		{[]int64{1, 3}, 0, false},
		{[]int64{20240101120000, 20240301120000}, 0, false},
	} {
		n, ok := legacySequence(tc.versions)
		require.Equal(t, tc.ok, ok, "%v", tc.versions)
		require.Equal(t, tc.n, n, "%v", tc.versions)
	}
}
