package cmdkit

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Open connects to url (pgx/v5 syntax, a DATABASE_URL) and pings it for at
// most ten seconds, with an error that says where it could not reach and
// names DATABASE_URL. A non-nil tracer traces every statement (a main
// passes otelpgx's while tracing is on).
func Open(ctx context.Context, url string, tracer pgx.QueryTracer) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database: DATABASE_URL is not a valid PostgreSQL URL: %w", err)
	}
	if tracer != nil {
		cfg.ConnConfig.Tracer = tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("database: cannot reach %s@%s:%d/%s: %w (set DATABASE_URL)",
			cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database, err)
	}
	return pool, nil
}

// OpenChecked is [Open], then check (a schema check that
// names the migration to run): a pool check refuses is closed.
func OpenChecked(ctx context.Context, url string, tracer pgx.QueryTracer, check func(context.Context, *pgxpool.Pool) error) (*pgxpool.Pool, error) {
	pool, err := Open(ctx, url, tracer)
	if err != nil {
		return nil, err
	}
	if err := check(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}
