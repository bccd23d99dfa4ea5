package checkout

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRootFindsTheModuleNotAToolsModule(t *testing.T) {
	t.Chdir("../../../tools/lint")
	root, err := Root()
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "migrations"))
	require.NoError(t, err, "root %s is outflow's checkout", root)

	t.Chdir(t.TempDir())
	_, err = Root()
	require.ErrorIs(t, err, ErrNotInCheckout)
}
