package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
)

// outflowCDC is outflow's relay with the cdc source (outbox.CDCRelay): the
// same enqueue as outflowPoll, delivery streamed from a logical replication
// slot of the scratch database. It needs a server with wal_level=logical;
// when DATABASE_URL's server lacks it, every contender runs on a throwaway
// cluster (see run).
//
// A cdc relay backfills every unpublished event by polling before it
// streams, at each start: so its drain of a backlog written while it was
// stopped is its polling sweeper's, by design, and the stream shows in the
// handoff phase, where events arrive while it runs.
type outflowCDC struct{ outflowPoll }

func (outflowCDC) Name() string { return "outflow_cdc" }

// slotName is the scratch database's own slot: slots are server-wide, and
// a database cannot be dropped while a slot of it exists.
func slotName(pool *pgxpool.Pool) string {
	return "peers_" + strings.ReplaceAll(pool.Config().ConnConfig.Database, "-", "_")
}

func (outflowCDC) Start(ctx context.Context, pool *pgxpool.Pool, sink Sink, _ Profile) (func(context.Context) error, error) {
	slot := slotName(pool)
	relay, err := outbox.NewRelay(pool, sinkPublisher(sink), outbox.RelayConfig{Logger: quietLogger, Source: "cdc", CDCSlot: slot})
	if err != nil {
		return nil, err
	}
	stop := runInBackground(ctx, relay.Run)
	return func(ctx context.Context) error {
		stop() // Run's error once stopped is not the run's: it was cancelled
		return dropSlot(ctx, pool, slot)
	}, nil
}

// dropSlot drops the relay's slot once its walsender has let go of it, so
// the scratch database can be dropped and no WAL is retained for it.
func dropSlot(ctx context.Context, pool *pgxpool.Pool, slot string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := qDropSlot.Exec(ctx, pool, slotArgs{Slot: slot})
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &pgErr) && pgErr.Code == "42704": // undefined_object: never created
			return nil
		case errors.As(err, &pgErr) && pgErr.Code == "55006" && time.Now().Before(deadline): // still active
			time.Sleep(100 * time.Millisecond)
		default:
			return fmt.Errorf("drop the replication slot %s: %w", slot, err)
		}
	}
}

func (outflowCDC) Settings(Profile) string {
	return fmt.Sprintf("CDCConfig{} for both profiles: the publication %s streamed from a slot of the scratch database "+
		"(pgoutput), per-order lanes, marks of %d or after %s; its polling sweeper (grace %s) with RelayConfig{} "+
		"backfills a backlog before streaming",
		outboxops.CDCPublicationDefault, outbox.MarkBatchSizeDefault, outbox.MarkDelayDefault, "10s")
}
