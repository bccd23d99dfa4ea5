package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/migrations"
)

// poolSize caps every pool the bench opens: the shared server allows 100
// connections, and a contender's consumer and producer each get one pool.
const poolSize = 10

// server is the PostgreSQL server of DATABASE_URL. Each contender gets a
// fresh database on it per round, peers_<contender>_<pid>_r<round>, so their
// tables, dead tuples and statistics never mix; the database of the URL
// itself is only used to create and drop them and to read the WAL position.
type server struct {
	admin *pgx.Conn
	base  *pgxpool.Config
	live  map[string]bool
}

func newServer(ctx context.Context, url string) (*server, error) {
	base, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL is not a valid PostgreSQL URL: %w", err)
	}
	base.MaxConns = poolSize
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	admin, err := pgx.ConnectConfig(cctx, base.ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("cannot reach PostgreSQL at %s:%d as %s: %w (set DATABASE_URL)",
			base.ConnConfig.Host, base.ConnConfig.Port, base.ConnConfig.User, err)
	}
	return &server{admin: admin, base: base, live: map[string]bool{}}, nil
}

func (s *server) version(ctx context.Context) (string, error) {
	var v string
	err := s.admin.QueryRow(ctx, queries.Get("ServerVersion")).Scan(&v)
	return v, err
}

// walPosition is the server's WAL position in bytes.
func (s *server) walPosition(ctx context.Context) (int64, error) {
	var n int64
	err := s.admin.QueryRow(ctx, queries.Get("WALPosition")).Scan(&n)
	return n, err
}

// scratch creates peers_<contender>_<pid>_r<round> with outflow's schema
// (the orders table every contender writes) and the contender's own, and
// returns a pool configuration for it.
func (s *server) scratch(ctx context.Context, c Contender, round int) (string, *pgxpool.Config, error) {
	name := fmt.Sprintf("peers_%s_%d_r%d", c.Name(), os.Getpid(), round)
	// DDL takes no parameters; the name is ours and quoted.
	if _, err := s.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("create scratch database %s: %w (the role of DATABASE_URL needs CREATEDB)", name, err)
	}
	s.live[name] = true
	cfg := s.base.Copy()
	cfg.ConnConfig.Database = name
	pool, err := pgxpool.NewWithConfig(ctx, cfg.Copy())
	if err != nil {
		return "", nil, err
	}
	defer pool.Close()
	if _, err := migrations.Up(ctx, pool, nil); err != nil {
		return "", nil, fmt.Errorf("migrate %s: %w", name, err)
	}
	if err := c.Install(ctx, pool); err != nil {
		return "", nil, fmt.Errorf("install %s in %s: %w", c.Name(), name, err)
	}
	return name, cfg, nil
}

// drop removes a scratch database, closing whatever is still connected.
func (s *server) drop(ctx context.Context, name string) error {
	if !s.live[name] {
		return nil
	}
	if _, err := s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop scratch database %s: %w", name, err)
	}
	delete(s.live, name)
	return nil
}

// close drops every scratch database still there and disconnects.
func (s *server) close(ctx context.Context) error {
	var first error
	for name := range s.live {
		if err := s.drop(ctx, name); err != nil && first == nil {
			first = err
		}
	}
	_ = s.admin.Close(ctx)
	return first
}

// openPool connects with cfg, adding tracer when it is not nil.
func openPool(ctx context.Context, cfg *pgxpool.Config, tracer *statementCounter) (*pgxpool.Pool, error) {
	cfg = cfg.Copy()
	if tracer != nil {
		cfg.ConnConfig.Tracer = tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}
