//go:build !linux

package ctl

import "os"

// IsTerminal reports whether f looks like a terminal: a character device.
// (/dev/null is one too; pass --yes in scripts regardless.)
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
