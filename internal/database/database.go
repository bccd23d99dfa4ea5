// Package database opens outflow's PostgreSQL pool the same way in every
// binary: DATABASE_URL (pgx/v5 syntax) with a local default, a bounded
// connect timeout, a schema check of the migration sets the binary needs
// that names `outboxctl migrate`, and, while tracing is on, its statements
// as spans.
package database

import (
	"context"
	"os"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/internal/telemetry"
	"github.com/outflow/outflow/migrations"
	"github.com/outflow/outflow/outbox/cmdkit"
)

// DefaultURL is used when DATABASE_URL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// URL returns DATABASE_URL or [DefaultURL].
func URL() string {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Open connects to url and pings it (cmdkit.Open). While tracing is on
// (telemetry.Enabled), each statement is a span of the request, publish or
// activity whose context runs it (otelpgx: never a trace of its own, and
// the statement's text without its parameters, so no personal data).
func Open(ctx context.Context, url string) (*pgxpool.Pool, error) {
	return cmdkit.Open(ctx, url, tracer())
}

// tracer is otelpgx's while tracing is on, else nil.
func tracer() pgx.QueryTracer {
	if telemetry.Enabled() {
		return otelpgx.NewTracer()
	}
	return nil
}

// OpenChecked opens url and refuses a database whose schema, the outbox's
// or the order app's, is behind this binary, with an error that names
// `outboxctl migrate`: for the order app's binaries.
func OpenChecked(ctx context.Context, url string) (*pgxpool.Pool, error) {
	return cmdkit.OpenChecked(ctx, url, tracer(), migrations.Check)
}

// OpenCheckedOutbox is [OpenChecked] for a binary that needs only the
// outbox's schema (the relay, outboxctl), so it runs on a team's database
// without the order app's tables; where the database has them, they must
// be current too (see migrations.CheckOutbox).
func OpenCheckedOutbox(ctx context.Context, url string) (*pgxpool.Pool, error) {
	return cmdkit.OpenChecked(ctx, url, tracer(), migrations.CheckOutbox)
}
