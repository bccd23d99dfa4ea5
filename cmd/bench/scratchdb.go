package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/internal/bench/benchdb"
)

// server is the PostgreSQL server named by DATABASE_URL. The bench never
// touches the database of that URL: each measurement gets a scratch database
// outflow_bench_<run>_<phase> on the same server (internal/bench/benchdb), freshly
// migrated, and drops it when done.
type server struct {
	*benchdb.Server
	run string
}

func newServer(ctx context.Context, url string) (*server, error) {
	s, err := benchdb.Connect(ctx, url, 0)
	if err != nil {
		return nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &server{Server: s, run: hex.EncodeToString(b[:])}, nil
}

// scratch creates and migrates the database outflow_bench_<run>_<phase> and
// returns its name and a pool configuration for it (pgxpool defaults, as the
// starter uses).
func (s *server) scratch(ctx context.Context, phase string) (string, *pgxpool.Config, error) {
	name := "outflow_bench_" + s.run + "_" + phase
	cfg, err := s.Create(ctx, name)
	return name, cfg, err
}

// scratchPool is [server.scratch] with a pool open on the database; done
// closes the pool and drops the database (on a context that outlives ctx's
// cancellation). Each of configure changes the pool's configuration first.
func (s *server) scratchPool(ctx context.Context, phase string, configure ...func(*pgxpool.Config)) (pool *pgxpool.Pool, done func(), err error) {
	name, cfg, err := s.scratch(ctx, phase)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range configure {
		c(cfg)
	}
	drop := func() { _ = s.Drop(context.WithoutCancel(ctx), name) } // close drops leftovers
	if pool, err = openPool(ctx, cfg); err != nil {
		drop()
		return nil, nil, err
	}
	return pool, func() { pool.Close(); drop() }, nil
}

// openPool connects to a scratch database with cfg.
func openPool(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	return benchdb.OpenPool(ctx, cfg)
}
