// Package benchdb gives outflow's benchmarks (cmd/bench and the peers bench,
// bench/peers) their scratch databases: each measurement creates a fresh
// database with outflow's schema on the server of DATABASE_URL, so no figure
// depends on what was there before or on another measurement's leftovers,
// and drops it when done. The database of the URL itself is only used to
// create and drop them and to read server-wide statistics.
package benchdb

import (
	"context"
	"embed"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/migrations"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed benchdb.sql
var sqlFiles embed.FS

// The package's statements (benchdb.sql), bound to their Go types when the
// package is initialised.
var (
	queries = namedsql.MustLoad(sqlFiles, "benchdb.sql")

	qServerVersion = namedsql.Bind[namedsql.NoArgs, string](queries, "ServerVersion")
)

// statements describes every bound statement, for the test that has the
// database check them.
var statements = []namedsql.Info{qServerVersion.Info()}

// Server is the PostgreSQL server of a benchmark.
type Server struct {
	// Admin is a connection to the URL's own database: CREATE and DROP
	// DATABASE, and statistics read from outside the database watched.
	Admin *pgx.Conn
	// Base is the URL's pool configuration; scratch databases copy it and
	// change the database name.
	Base *pgxpool.Config
	live map[string]bool
}

// Connect reaches the server of url; maxConns caps every pool of the
// scratch databases (0: pgxpool's default).
func Connect(ctx context.Context, url string, maxConns int32) (*Server, error) {
	base, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL is not a valid PostgreSQL URL: %w", err)
	}
	if maxConns > 0 {
		base.MaxConns = maxConns
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	admin, err := pgx.ConnectConfig(cctx, base.ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("cannot reach PostgreSQL at %s:%d as %s: %w (set DATABASE_URL)",
			base.ConnConfig.Host, base.ConnConfig.Port, base.ConnConfig.User, err)
	}
	return &Server{Admin: admin, Base: base, live: map[string]bool{}}, nil
}

// Version is the server's version string.
func (s *Server) Version(ctx context.Context) (string, error) {
	return qServerVersion.Value(ctx, s.Admin, namedsql.NoArgs{})
}

// Create creates the database name, migrates it to outflow's schema and
// returns a pool configuration for it.
func (s *Server) Create(ctx context.Context, name string) (*pgxpool.Config, error) {
	// DDL takes no parameters; the name is the caller's and quoted.
	if _, err := s.Admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create scratch database %s: %w (the role of DATABASE_URL needs CREATEDB)", name, err)
	}
	s.live[name] = true
	cfg := s.Base.Copy()
	cfg.ConnConfig.Database = name
	pool, err := pgxpool.NewWithConfig(ctx, cfg.Copy())
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if _, err := migrations.Up(ctx, pool, nil); err != nil {
		return nil, fmt.Errorf("migrate scratch database %s: %w", name, err)
	}
	return cfg, nil
}

// Drop removes a scratch database, closing whatever is still connected.
func (s *Server) Drop(ctx context.Context, name string) error {
	if !s.live[name] {
		return nil
	}
	if _, err := s.Admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop scratch database %s: %w", name, err)
	}
	delete(s.live, name)
	return nil
}

// Close drops every scratch database still there and disconnects.
func (s *Server) Close(ctx context.Context) error {
	var first error
	for name := range s.live {
		if err := s.Drop(ctx, name); err != nil && first == nil {
			first = err
		}
	}
	_ = s.Admin.Close(ctx)
	return first
}

// Shutdown is Close within 30 seconds, for a deferred call at the end of a
// run: warn gets the error, which names what is left to drop by hand.
func (s *Server) Shutdown(warn func(error)) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		warn(err)
	}
}

// OpenPool connects to a scratch database with cfg and pings it.
func OpenPool(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg.Copy())
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// Order is the order every benchmark places: the README's example.
func Order() orders.CreateOrderParams {
	return orders.CreateOrderParams{
		CustomerEmail: "bench@example.com",
		Currency:      "usd",
		PaymentMethod: "pm_card_visa",
		Items:         []orders.Item{{SKU: "SKU-1", Quantity: 2, UnitAmount: 1250}},
	}
}
