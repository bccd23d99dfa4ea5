package checkout

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRootFindsTheModuleNotAToolsModule(t *testing.T) {
	// From a tools module and from the library's module (outbox/go.mod):
	// the checkout is the root module's directory.
	here, err := os.Getwd()
	require.NoError(t, err)
	for _, dir := range []string{"../../../../tools/lint", "../../.."} {
		t.Chdir(filepath.Join(here, dir))
		root, err := Root()
		require.NoError(t, err)
		_, err = os.Stat(filepath.Join(root, "migrations"))
		require.NoError(t, err, "root %s is outflow's checkout", root)
	}

	t.Chdir(t.TempDir())
	_, err = Root()
	require.ErrorIs(t, err, ErrNotInCheckout)
}
