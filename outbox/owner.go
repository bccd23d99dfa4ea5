package outbox

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
)

// newOwner returns "hostname-pid-random": readable in claimed_by (which host,
// which process) and unique per process start even when a PID is reused or
// several relays run in one process.
func newOwner() (string, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("outbox: owner id: %w", err)
	}
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:])), nil
}
