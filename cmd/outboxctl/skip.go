package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/outboxops"
)

// runSkip gives up a quarantined event, recording the reason and the actor.
// An event of an order (aggregate type order) in a database that holds the
// order app's orders table also settles its skipped sequence in the order's
// projection, in the same transaction (orders.SettleSkippedTx); any other
// event, and an order event in a database without the order app, is only
// skipped, and the command says which happened.
func runSkip(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "skip", "skip EVENT_ID --reason TEXT [--actor NAME] [--yes]\n\n"+
		"An event of aggregate type order, in a database with the order app's orders table, also settles\n"+
		"its sequence in the order's projection (in the same transaction), so the order's later events apply.")
	reason := fs.String("reason", "", "why this event may be given up (mandatory; recorded in skip_reason)")
	actor := fs.String("actor", env.actor, "who decided the skip (recorded in skipped_by)")
	yes := yesFlag(fs)
	pos, err := parse(env, fs, args)
	if err != nil {
		return err
	}
	id, err := eventIDArg(fs, pos)
	if err != nil {
		return err
	}
	if err := auditArgs(fs, *reason, *actor, "a skip loses a business event, so say why (e.g. --reason \"payload references a deleted SKU; refunded by hand, ticket OPS-123\")"); err != nil {
		return err
	}
	pool, err := openDB(ctx, env)
	if err != nil {
		return err
	}
	defer pool.Close()
	// The skip and what it means to the event's consumers commit together:
	// an order's projection applies its events strictly in sequence, so a
	// skipped order event must close its place in the order's stream, or the
	// order's later events (its cancel) wait for it forever.
	// A database without the order app (the outbox's own tables only) has
	// no projection to settle: an event of aggregate type order there is
	// some other service's order, and only skipped.
	// An event of the log is skipped with the log's rules (outboxops.SkipTx):
	// only the head of a quarantined hold. The head of a replay's hold that
	// was delivered before the replay is a redelivery: its skip gives up
	// that redelivery only, the event stays published, and its consumers,
	// which had it, have nothing to settle.
	var (
		c       outboxops.Change
		settled string
	)
	skip := func(tx pgx.Tx) error {
		var err error
		if c, err = outboxops.SkipTx(ctx, tx, id, *reason, *actor); err != nil {
			return err
		}
		if c.Before.AggregateType != orders.AggregateType || (c.Log != nil && c.Log.Redelivery) {
			return nil
		}
		missing, err := missingTables(ctx, tx, "orders")
		if err != nil {
			return fmt.Errorf("nothing was skipped: %w", err)
		}
		if len(missing) > 0 {
			settled = "no order projection settled: this database has no orders table (the order app is not here), so the skip is all there is to it"
			return nil
		}
		if err := orders.SettleSkippedTx(ctx, tx, c.Before.AggregateType, c.Before.AggregateID, c.Before.Sequence); err != nil {
			return fmt.Errorf("nothing was skipped: the order's projection cannot account for skipping %s: %w", id, err)
		}
		settled = fmt.Sprintf("order %s's projection settled: sequence %d counts as applied", c.Before.AggregateID, c.Before.Sequence)
		return nil
	}
	// The plan is the skip rehearsed (refusals included).
	if err := rehearse(ctx, pool, skip); err != nil {
		return err
	}
	what := fmt.Sprintf("%s (%s %s/%s seq=%d)", id, c.Before.Type, c.Before.AggregateType, c.Before.AggregateID, c.Before.Sequence)
	if l := c.Log; l != nil && l.Redelivery {
		fmt.Fprintf(env.stdout, "plan: skip the redelivery of %s by a replay (it stays published), by %s: %q\n", what, *actor, *reason)
	} else {
		fmt.Fprintf(env.stdout, "plan: skip %s, by %s: %q; it will never be published, and its aggregate's later events flow again\n", what, *actor, *reason)
	}
	if settled != "" {
		fmt.Fprintf(env.stdout, "plan: %s\n", settled)
	}
	if ok, err := proceed(env, *yes, change{question: "Skip it? [y/N] ", done: "skipped", todo: "skip it"}); !ok {
		return err
	}
	c, settled = outboxops.Change{}, ""
	err = pgx.BeginFunc(ctx, pool, skip)
	if err != nil {
		return err
	}
	logged := c.Log
	if logged != nil && logged.Redelivery {
		env.logger.Info("outboxctl: log event's redelivery skipped", "event_id", id, "actor", *actor, "reason", *reason,
			"aggregate_type", logged.AggregateType, "aggregate_id", logged.AggregateID, "aggregate_sequence", logged.Sequence,
			"event_type", logged.Type, "partition", logged.Partition, "attempts", logged.Attempts, "last_error", logged.LastError)
		fmt.Fprintf(env.stdout, "skipped the redelivery of %s (%s %s/%s seq=%d) by a replay, by %s: %q; it was delivered before the replay and stays published (nothing is recorded skipped, and its consumers, which had it, settle nothing); the replay goes on with its order's next event\n",
			id, logged.Type, logged.AggregateType, logged.AggregateID, logged.Sequence, *actor, *reason)
		return nil
	}
	if logged != nil {
		env.logger.Info("outboxctl: log event skipped", "event_id", id, "actor", *actor, "reason", *reason,
			"aggregate_type", logged.AggregateType, "aggregate_id", logged.AggregateID, "aggregate_sequence", logged.Sequence,
			"event_type", logged.Type, "partition", logged.Partition, "attempts", logged.Attempts, "last_error", logged.LastError,
			"order_projection", settled)
		fmt.Fprintf(env.stdout, "skipped %s (%s %s/%s seq=%d) in the log by %s: %q; it will never be published, and its order's later events flow again\n",
			id, logged.Type, logged.AggregateType, logged.AggregateID, logged.Sequence, *actor, *reason)
		if settled != "" {
			fmt.Fprintln(env.stdout, settled)
		}
		return nil
	}
	env.logger.Info("outboxctl: event skipped", "event_id", id, "actor", *actor, "reason", *reason,
		"aggregate_type", c.Before.AggregateType, "aggregate_id", c.Before.AggregateID, "aggregate_sequence", c.Before.Sequence,
		"event_type", c.Before.Type, "attempts", c.Before.Attempts, "last_error", c.Before.LastError, "order_projection", settled)
	fmt.Fprintf(env.stdout, "skipped %s (%s %s/%s seq=%d) by %s: %q; it will never be published, and its aggregate's later events flow again\n",
		id, c.After.Type, c.After.AggregateType, c.After.AggregateID, c.After.Sequence, c.After.SkippedBy, c.After.SkipReason)
	if settled != "" {
		fmt.Fprintln(env.stdout, settled)
	}
	return nil
}
