package ctl

import (
	"context"
	"fmt"
	"io"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/outboxops"
)

// runSkip gives up a quarantined event, recording the reason and the actor.
// What the skip means to the event's consumers commits with it where the
// binary says so ([App.SettleSkipTx]: the root's settles an order's
// projection), and the command says what happened.
func runSkip(ctx context.Context, env *Env, args []string) error {
	synopsis := "skip EVENT_ID --reason TEXT [--actor NAME] [--yes]"
	if env.app != nil && env.app.SkipNote != "" {
		synopsis += "\n\n" + env.app.SkipNote
	}
	fs := NewFlagSet(env, "skip", synopsis)
	reason := fs.String("reason", "", "why this event may be given up (mandatory; recorded in skip_reason)")
	actor := fs.String("actor", env.Actor, "who decided the skip (recorded in skipped_by)")
	yes := YesFlag(fs)
	pos, err := Parse(env, fs, args)
	if err != nil {
		return err
	}
	id, err := eventIDArg(fs, pos)
	if err != nil {
		return err
	}
	if err := AuditArgs(fs, *reason, *actor, "a skip loses a business event, so say why (e.g. --reason \"payload references a deleted SKU; refunded by hand, ticket OPS-123\")"); err != nil {
		return err
	}
	pool, err := OpenDB(ctx, env)
	if err != nil {
		return err
	}
	defer pool.Close()
	// The skip and what it means to the event's consumers commit together
	// (App.SettleSkipTx: an order's projection applies its events strictly
	// in sequence, so a skipped order event must close its place in the
	// order's stream).
	// An event of the log is skipped with the log's rules (outboxops.SkipTx):
	// only the head of a quarantined hold. The head of a replay's hold that
	// was delivered before the replay is a redelivery: its skip gives up
	// that redelivery only, the event stays published, and its consumers,
	// which had it, have nothing to settle.
	var (
		c       outboxops.Change
		settled string
	)
	skip := skipFunc(ctx, env, id, *reason, *actor, &c, &settled)
	// The plan is the skip rehearsed (refusals included).
	if err := rehearse(ctx, pool, skip); err != nil {
		return err
	}
	writeSkipPlan(env.Stdout, id, c, *actor, *reason, settled)
	if ok, err := Proceed(env, *yes, Change{Question: "Skip it? [y/N] ", Done: "skipped", Todo: "skip it"}); !ok {
		return err
	}
	c, settled = outboxops.Change{}, ""
	err = pgx.BeginFunc(ctx, pool, skip)
	if err != nil {
		return err
	}
	logged := c.Log
	if logged != nil && logged.Redelivery {
		env.Logger.Info("outboxctl: log event's redelivery skipped", "event_id", id, "actor", *actor, "reason", *reason,
			"aggregate_type", logged.AggregateType, "aggregate_id", logged.AggregateID, "aggregate_sequence", logged.Sequence,
			"event_type", logged.Type, "partition", logged.Partition, "attempts", logged.Attempts, "last_error", logged.LastError)
		fmt.Fprintf(env.Stdout, "skipped the redelivery of %s (%s %s/%s seq=%d) by a replay, by %s: %q; it was delivered before the replay and stays published (nothing is recorded skipped, and its consumers, which had it, settle nothing); the replay goes on with its order's next event\n",
			id, logged.Type, logged.AggregateType, logged.AggregateID, logged.Sequence, *actor, *reason)
		return nil
	}
	if logged != nil {
		env.Logger.Info("outboxctl: log event skipped", "event_id", id, "actor", *actor, "reason", *reason,
			"aggregate_type", logged.AggregateType, "aggregate_id", logged.AggregateID, "aggregate_sequence", logged.Sequence,
			"event_type", logged.Type, "partition", logged.Partition, "attempts", logged.Attempts, "last_error", logged.LastError,
			"settled", settled)
		fmt.Fprintf(env.Stdout, "skipped %s (%s %s/%s seq=%d) in the log by %s: %q; it will never be published, and its order's later events flow again\n",
			id, logged.Type, logged.AggregateType, logged.AggregateID, logged.Sequence, *actor, *reason)
		if settled != "" {
			fmt.Fprintln(env.Stdout, settled)
		}
		return nil
	}
	env.Logger.Info("outboxctl: event skipped", "event_id", id, "actor", *actor, "reason", *reason,
		"aggregate_type", c.Before.AggregateType, "aggregate_id", c.Before.AggregateID, "aggregate_sequence", c.Before.Sequence,
		"event_type", c.Before.Type, "attempts", c.Before.Attempts, "last_error", c.Before.LastError, "settled", settled)
	fmt.Fprintf(env.Stdout, "skipped %s (%s %s/%s seq=%d) by %s: %q; it will never be published, and its aggregate's later events flow again\n",
		id, c.After.Type, c.After.AggregateType, c.After.AggregateID, c.After.Sequence, c.After.SkippedBy, c.After.SkipReason)
	if settled != "" {
		fmt.Fprintln(env.Stdout, settled)
	}
	return nil
}

// skipFunc is the skip of event id in a transaction: outboxops.SkipTx, then
// what the skip means to its consumers ([App.SettleSkipTx]), both recorded
// in *c and *settled. The CLI and the console run it rehearsed for the
// plan, then for real.
func skipFunc(ctx context.Context, env *Env, id uuid.UUID, reason, actor string, c *outboxops.Change, settled *string) func(pgx.Tx) error {
	return func(tx pgx.Tx) error {
		var err error
		*settled = ""
		if *c, err = outboxops.SkipTx(ctx, tx, id, reason, actor); err != nil {
			return err
		}
		if env.app == nil || env.app.SettleSkipTx == nil || (c.Log != nil && c.Log.Redelivery) {
			return nil
		}
		*settled, err = env.app.SettleSkipTx(ctx, tx, *c)
		return err
	}
}

// writeSkipPlan prints the plan of a skip from the skip rehearsed (c,
// settled): what `outboxctl skip` and the console show.
func writeSkipPlan(w io.Writer, id uuid.UUID, c outboxops.Change, actor, reason, settled string) {
	what := fmt.Sprintf("%s (%s %s/%s seq=%d)", id, c.Before.Type, c.Before.AggregateType, c.Before.AggregateID, c.Before.Sequence)
	if l := c.Log; l != nil && l.Redelivery {
		fmt.Fprintf(w, "plan: skip the redelivery of %s by a replay (it stays published), by %s: %q\n", what, actor, reason)
	} else {
		fmt.Fprintf(w, "plan: skip %s, by %s: %q; it will never be published, and its aggregate's later events flow again\n", what, actor, reason)
	}
	if settled != "" {
		fmt.Fprintf(w, "plan: %s\n", settled)
	}
}
