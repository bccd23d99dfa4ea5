// Package checkout finds the outflow source checkout a program or test runs
// in, for the tools that live beside the code (bin/temporal, deploy/, the files the tests scan).
package checkout

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
)

// modulePath is the first line of outflow's go.mod.
const modulePath = "module github.com/outflow/outflow\n"

// ErrNotInCheckout is returned when no directory above the working
// directory holds outflow's go.mod.
var ErrNotInCheckout = errors.New("not inside the outflow checkout (no go.mod of github.com/outflow/outflow above the working directory)")

// Root walks up from the working directory to the directory holding
// outflow's go.mod (not a tools module's).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte(modulePath)) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNotInCheckout
		}
		dir = parent
	}
}
