package main

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests cover the pure parts (percentiles, ratios, verdicts, the table,
// flags) and check the bench's statements against PostgreSQL; the
// measurements themselves need Temporal too and are exercised by running the
// bench (`make bench`).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
