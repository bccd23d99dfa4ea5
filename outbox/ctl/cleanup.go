package ctl

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/outflow/outflow/outbox/outboxops"
)

// runCleanup deletes old published events and inbox rows in
// bounded batches, printing progress per batch, then runs a pass of the log
// source's retention (outboxops.RetainLog: ranges made ahead of the log's
// sequence, ranges no longer needed dropped).
func runCleanup(ctx context.Context, env *Env, args []string) error {
	fs := NewFlagSet(env, "cleanup", "cleanup --retention DURATION [--batch-size N] [--inbox-retention DURATION] [--yes]")
	retention := fs.Duration("retention", 0, "delete events published longer ago than this, e.g. 168h (mandatory)")
	inbox := fs.Duration("inbox-retention", 0, "delete inbox rows (processed_events) older than this; at least --retention (default --retention)")
	batch := fs.Int("batch-size", 1000, "rows per batch, each batch one short transaction (1 to 100000)")
	yes := YesFlag(fs)
	pos, err := Parse(env, fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return Usagef(fs, "cleanup takes no arguments, got %q", pos)
	case *retention <= 0:
		return Usagef(fs, "--retention is mandatory and positive, a Go duration such as 168h (7 days) or 720h (30 days)")
	case *inbox != 0 && *inbox < *retention:
		return Usagef(fs, "--inbox-retention %s is shorter than --retention %s: an event that can still be replayed would lose its inbox rows and apply its local effects twice; use --inbox-retention %s or more",
			*inbox, *retention, *retention)
	case *batch < 1 || *batch > 100000:
		return Usagef(fs, "--batch-size %d is out of range; use 1 to 100000", *batch)
	}
	pool, err := OpenDB(ctx, env)
	if err != nil {
		return err
	}
	defer pool.Close()
	inboxRetention := *inbox
	if inboxRetention == 0 {
		inboxRetention = *retention
	}
	fmt.Fprintf(env.Stdout, "plan: delete, in batches of %d, the events published more than %s ago and the inbox rows processed more than %s ago whose event is gone; then the log's retention pass (ranges made ahead, ranges no longer needed dropped)\n",
		*batch, *retention, inboxRetention)
	if ok, err := Proceed(env, *yes, Change{Question: "Delete them? [y/N] ", Done: "deleted", Todo: "delete them"}); !ok {
		return err
	}
	start := time.Now()
	res, err := outboxops.Cleanup(ctx, pool, outboxops.CleanupOptions{
		Retention: *retention, InboxRetention: *inbox, BatchSize: *batch, Failpoints: env.Failpoints,
		OnBatch: func(b outboxops.CleanupBatch) {
			fmt.Fprintf(env.Stdout, "%s: batch %d deleted %d rows (%d so far)\n", b.Table, b.Number, b.Deleted, b.Total)
		},
	})
	env.Logger.Info("outboxctl: cleanup", "actor", env.Actor, "retention", *retention, "inbox_retention", *inbox,
		"events_deleted", res.EventsDeleted, "inbox_deleted", res.InboxDeleted, "batches", res.Batches,
		"events_cutoff", res.EventsCutoff, "elapsed", time.Since(start).Round(time.Millisecond), "error", err)
	if err != nil {
		return fmt.Errorf("%w (the batches before the error are deleted; run the command again to finish)", err)
	}
	fmt.Fprintf(env.Stdout, "deleted %d events published before %s and %d inbox rows processed before %s\n",
		res.EventsDeleted, res.EventsCutoff.UTC().Format(time.RFC3339), res.InboxDeleted, res.InboxCutoff.UTC().Format(time.RFC3339))
	lres, err := outboxops.RetainLog(ctx, pool, outboxops.LogRetentionOptions{Retention: *retention})
	env.Logger.Info("outboxctl: log retention", "actor", env.Actor, "retention", *retention,
		"ranges_made", lres.Made, "ranges_sealed", lres.Sealed, "ranges_dropped", lres.Dropped, "busy", lres.Busy, "error", err)
	switch {
	case err != nil:
		return fmt.Errorf("%w (run the command again to finish)", err)
	case lres.Busy:
		fmt.Fprintln(env.Stdout, "log: another process is running the log's retention; nothing done")
	default:
		fmt.Fprintf(env.Stdout, "log: made %d ranges ahead, dropped %d (%s)\n", lres.Made, len(lres.Dropped), strings.Join(lres.Dropped, ", "))
	}
	return nil
}
