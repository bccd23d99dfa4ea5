package outboxtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/namedsql"
)

// schemaMaxConns bounds each NewSchema pool, so that many parallel tests
// stay well under the server's max_connections.
const schemaMaxConns = 4

// NewSchema gives t an outbox of its own inside pool's database: a fresh
// schema, migrated (outbox.Migrate), and a pool whose connections use it
// (search_path), which t's code and relays use instead of pool. No relay
// of another test, and none of the service running against the database's
// own outbox, sees its events, and nothing t does touches theirs; the
// schema is dropped when t ends. The pool has at most 4 connections.
//
// Statements of the outbox name their tables unqualified, so everything
// the library does stays in the schema. What PostgreSQL keeps per database
// is shared: NOTIFY channels (a relay may wake for another schema's event,
// and find nothing), advisory locks (migrations and cleanups take turns),
// and the CDC source's publication, which NewSchema does not make.
func NewSchema(t testing.TB, pool *pgxpool.Pool) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("outboxtest: %v", err)
	}
	name := "outboxtest_" + hex.EncodeToString(b[:])
	ident := pgx.Identifier{name}.Sanitize()
	// A schema name is an identifier, which no placeholder can stand for;
	// it is made here, never taken from the caller.
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
		t.Fatalf("outboxtest: create the test's schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := pool.Exec(ctx, "DROP SCHEMA "+ident+" CASCADE"); err != nil {
			t.Errorf("outboxtest: drop the test's schema %s: %v", name, err)
		}
	})
	cfg := pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["search_path"] = name
	cfg.MaxConns = min(cfg.MaxConns, schemaMaxConns)
	cfg.MinConns = 0
	own, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("outboxtest: connect to the test's schema: %v", err)
	}
	t.Cleanup(own.Close) // before the schema's drop: cleanups run last first
	if err := outbox.Migrate(ctx, own); err != nil {
		t.Fatalf("outboxtest: migrate the test's schema %s: %v", name, err)
	}
	return own
}

// Holders describes who holds the outbox's events in db, state by state:
// how many are published (and by which relay), leased (by which relay,
// until when), quarantined (the last error), skipped, or pending with no
// relay on them. A test that waited for deliveries in vain prints it:
// events published by a relay that is not the test's mean another relay
// (a running service's, another test's) reads the same outbox; give the
// test its own with [NewSchema].
func Holders(ctx context.Context, db DB) (string, error) {
	rows, err := qHolders.All(ctx, db, namedsql.NoArgs{})
	if err != nil {
		return "", err
	}
	if len(rows) == 0 {
		return "the outbox holds no event: did the test's transaction commit?", nil
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%d %s", r.Events, r.State)
		switch r.State {
		case "published", "leased":
			fmt.Fprintf(&b, " (by relay %s, %s)", r.Holder, r.Detail)
		case "quarantined":
			fmt.Fprintf(&b, " (last error: %s)", r.Detail)
		case "pending":
			if r.Detail != "" {
				fmt.Fprintf(&b, " (%s)", r.Detail)
			} else {
				b.WriteString(" (no relay has claimed them: is one running on this database and schema?)")
			}
		}
		b.WriteString("; ")
	}
	return strings.TrimSuffix(b.String(), "; "), nil
}
