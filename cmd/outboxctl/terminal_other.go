//go:build !linux

package main

import "os"

// isTerminal reports whether f looks like a terminal: a character device.
// (/dev/null is one too; pass --yes in scripts regardless.)
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
