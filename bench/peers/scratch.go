package main

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/internal/bench/benchdb"
	"github.com/outflow/outflow/outbox/namedsql"
)

// poolSize caps every pool the bench opens: the shared server allows 100
// connections, and a contender's consumer and producer each get one pool.
const poolSize = 10

// server is the PostgreSQL server of DATABASE_URL. Each contender gets a
// fresh database on it per round, peers_<contender>_<pid>_r<round>
// (internal/bench/benchdb), so their tables, dead tuples and statistics never mix.
type server struct{ *benchdb.Server }

func newServer(ctx context.Context, url string) (*server, error) {
	s, err := benchdb.Connect(ctx, url, poolSize)
	if err != nil {
		return nil, err
	}
	return &server{s}, nil
}

// walPosition is the server's WAL position in bytes.
func (s *server) walPosition(ctx context.Context) (int64, error) {
	return qWALPosition.Value(ctx, s.Admin, namedsql.NoArgs{})
}

// scratch creates peers_<contender>_<pid>_r<round> with outflow's schema
// (the orders table every contender writes) and the contender's own, and
// returns a pool configuration for it.
func (s *server) scratch(ctx context.Context, c Contender, round int) (string, *pgxpool.Config, error) {
	return s.scratchNamed(ctx, c, fmt.Sprintf("peers_%s_%d_r%d", c.Name(), os.Getpid(), round))
}

// scratchNamed is [server.scratch] with the database's name given.
func (s *server) scratchNamed(ctx context.Context, c Contender, name string) (string, *pgxpool.Config, error) {
	cfg, err := s.Create(ctx, name)
	if err != nil {
		return "", nil, err
	}
	pool, err := benchdb.OpenPool(ctx, cfg)
	if err != nil {
		return "", nil, err
	}
	defer pool.Close()
	if err := c.Install(ctx, pool); err != nil {
		return "", nil, fmt.Errorf("install %s in %s: %w", c.Name(), name, err)
	}
	return name, cfg, nil
}

// openPool connects with cfg, adding tracer when it is not nil.
func openPool(ctx context.Context, cfg *pgxpool.Config, tracer *statementCounter) (*pgxpool.Pool, error) {
	cfg = cfg.Copy()
	if tracer != nil {
		cfg.ConnConfig.Tracer = tracer
	}
	return benchdb.OpenPool(ctx, cfg)
}
