package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/namedsql"
)

// statementCounter is a pgx tracer that counts the statements a pool sends:
// every Exec and Query (BEGIN and COMMIT included), every statement of a
// batch and every COPY.
type statementCounter struct{ n atomic.Int64 }

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (*statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (*statementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (c *statementCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	c.n.Add(1)
}
func (*statementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
func (c *statementCounter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (*statementCounter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// churn is the scratch database's count of dead row versions made so far
// (TupleChurn). It first waits until no other client is connected, so that
// every backend that worked has exited and flushed its statistics.
func churn(ctx context.Context, cfg *pgxpool.Config) (int64, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := statsAlone(ctx, conn); err != nil {
		return 0, err
	}
	return qTupleChurn.Value(ctx, conn, namedsql.NoArgs{})
}

// statsAlone waits until conn is the only client of its database, so that
// every backend that worked has exited and flushed its statistics, and
// clears conn's statistics snapshot.
func statsAlone(ctx context.Context, conn *pgx.Conn) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		others, err := qOtherClients.Value(ctx, conn, namedsql.NoArgs{})
		if err != nil {
			return err
		}
		if others == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d clients still connected to %s after 30s", others, conn.Config().Database)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// An exiting backend leaves pg_stat_activity just before it flushes its
	// statistics (both are exit callbacks, in that order); give it a moment.
	time.Sleep(250 * time.Millisecond)
	_, err := qClearStatsSnapshot.Exec(ctx, conn, namedsql.NoArgs{})
	return err
}
