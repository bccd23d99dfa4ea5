package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/migrations"
)

// server is the PostgreSQL server named by DATABASE_URL. The bench never
// touches the database of that URL: each measurement gets a scratch database
// outflow_bench_<run>_<phase> on the same server, freshly migrated, and drops
// it when done, so no figure depends on what was there before or on another
// measurement's leftovers.
type server struct {
	// admin is a connection to DATABASE_URL's own database, used for CREATE
	// and DROP DATABASE and to read pg_stat_database from outside the
	// scratch database being watched.
	admin *pgx.Conn
	// base is DATABASE_URL's pool configuration; scratch pools copy it and
	// change the database name.
	base *pgxpool.Config
	run  string
	live map[string]bool
}

func newServer(ctx context.Context, url string) (*server, error) {
	base, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL is not a valid PostgreSQL URL: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	admin, err := pgx.ConnectConfig(cctx, base.ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("cannot reach PostgreSQL at %s:%d as %s: %w (set DATABASE_URL)",
			base.ConnConfig.Host, base.ConnConfig.Port, base.ConnConfig.User, err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &server{admin: admin, base: base, run: hex.EncodeToString(b[:]), live: map[string]bool{}}, nil
}

// version is the server's version string.
func (s *server) version(ctx context.Context) (string, error) {
	var v string
	err := s.admin.QueryRow(ctx, queries.Get("ServerVersion")).Scan(&v)
	return v, err
}

// scratch creates and migrates the database outflow_bench_<run>_<phase> and
// returns its name and a pool configuration for it (pgxpool defaults, as the
// starter uses).
func (s *server) scratch(ctx context.Context, phase string) (string, *pgxpool.Config, error) {
	name := "outflow_bench_" + s.run + "_" + phase
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
		return "", nil, fmt.Errorf("migrate scratch database %s: %w", name, err)
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

// openPool connects to a scratch database with cfg.
func openPool(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
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
