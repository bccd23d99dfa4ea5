package invoices

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// RunRelay hands every committed event of db's outbox to Temporal, one
// workflow per event with the event's ID as the workflow ID, until ctx
// ends. c is a client made from opts (its namespace is the relay's); reg
// receives the relay's metrics. The relay reads the source the database
// records (poll by default; `outboxctl source set` changes it while it
// runs). Run as many as you like: they share the work through leases.
func RunRelay(ctx context.Context, db *pgxpool.Pool, c client.Client, opts client.Options, reg prometheus.Registerer) error {
	pub, err := temporalpub.New(c, opts, temporalpub.Config{Routes: Routes(), Registerer: reg})
	if err != nil {
		return err
	}
	relay, err := outbox.NewRelay(db, pub, outbox.RelayConfig{Registerer: reg})
	if err != nil {
		return err
	}
	return relay.Run(ctx)
}

// Cleanup deletes, in short batches, the outbox events published longer
// than retention ago and the inbox rows of events no longer kept; an
// unpublished or quarantined event stays however old. Of several relay
// processes calling it on a schedule, one cleans at a time: the others find
// its lock held and skip the pass (ran is false).
func Cleanup(ctx context.Context, db *pgxpool.Pool, retention time.Duration) (ran bool, err error) {
	_, ran, err = outboxops.CleanupExclusive(ctx, db, outboxops.CleanupOptions{Retention: retention})
	return ran, err
}
