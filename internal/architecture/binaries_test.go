package architecture

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
)

// TestNoBuiltBinaryIsTracked: a binary built by hand at the root (go build
// ./cmd/inventory writes ./inventory) once slipped into a commit; every
// clone then carried it and a build overwrote a tracked file. Built
// programs belong in bin/ (ignored), never in git.
func TestNoBuiltBinaryIsTracked(t *testing.T) {
	t.Parallel()
	root, err := checkout.Root()
	require.NoError(t, err)
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	var binaries []string
	magic := make([]byte, 4)
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		fh, err := os.Open(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			continue // deleted in the working tree
		}
		n, _ := io.ReadFull(fh, magic)
		fh.Close()
		if n == 4 && bytes.Equal(magic, []byte("\x7fELF")) {
			binaries = append(binaries, f)
		}
	}
	require.Empty(t, binaries, "built programs are tracked by git: git rm --cached them and ignore them in .gitignore")
}
