package main

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests cover the pure parts (percentiles, ratios, verdicts, the table,
// flags); the measurements themselves need PostgreSQL and Temporal and are
// exercised by running the bench (`make bench`).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
