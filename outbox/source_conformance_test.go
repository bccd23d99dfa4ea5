package outbox_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/conformance/sourcetest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestSourceConformance runs the source conformance suite
// (outbox/conformance/sourcetest) for each relay source, each on databases
// of a wal_level=logical server (the suite switches to cdc from every
// source).
func TestSourceConformance(t *testing.T) {
	for _, name := range []string{"poll", "cdc", "log"} {
		t.Run(name, func(t *testing.T) {
			sourcetest.Run(t, sourcetest.Source{
				Name:   name,
				DB:     func(t *testing.T) *pgxpool.Pool { pool, _ := testdb.NewLogical(t); return pool },
				Logger: quietLogger(),
			})
		})
	}
}
