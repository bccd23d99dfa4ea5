package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/outflow/outflow/outbox"
)

// runReplay delivers the published events of a window again, after a
// confirmation (see outbox.Replay for the semantics against Temporal).
func runReplay(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "replay", "replay --from TIME --to TIME [--aggregate ID [--aggregate-type TYPE]] [--yes]")
	from := fs.String("from", "", "window start, RFC 3339 (e.g. 2025-06-01T10:00:00Z), inclusive, on the events' occurred_at")
	to := fs.String("to", "", "window end, RFC 3339, exclusive")
	aggregate := fs.String("aggregate", "", "only this aggregate's events (an order id)")
	aggregateType := fs.String("aggregate-type", "order", "the type of --aggregate's aggregate; without --aggregate, set explicitly: only aggregates of this type")
	yes := fs.Bool("yes", false, "do not ask for confirmation (required when stdin is not a terminal)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "replay takes no arguments, got %q", pos)
	}
	var opts outbox.ReplayOptions
	opts.AggregateID = *aggregate
	// An aggregate ID is unique only within its type, so --aggregate always
	// filters on a type, "order" unless told otherwise. Without --aggregate
	// the default does not apply: a replay of a window replays every type
	// unless --aggregate-type is given.
	typeSet := false
	fs.Visit(func(f *flag.Flag) { typeSet = typeSet || f.Name == "aggregate-type" })
	if opts.AggregateID != "" || typeSet {
		if *aggregateType == "" {
			return usagef(fs, "--aggregate-type must not be empty")
		}
		opts.AggregateType = *aggregateType
	}
	for _, f := range []struct {
		name, value string
		dst         *time.Time
	}{{"--from", *from, &opts.From}, {"--to", *to, &opts.To}} {
		if f.value == "" {
			return usagef(fs, "%s is mandatory", f.name)
		}
		if *f.dst, err = timeArg(fs, f.name, f.value); err != nil {
			return err
		}
	}
	if !opts.To.After(opts.From) {
		return usagef(fs, "--to (%s) must be after --from (%s)", *to, *from)
	}

	pool, err := openDB(ctx, env)
	if err != nil {
		return err
	}
	defer pool.Close()
	plan, err := outbox.PlanReplay(ctx, pool, opts)
	if err != nil {
		return err
	}
	scope := "all aggregates"
	switch {
	case opts.AggregateID != "":
		scope = "aggregate " + opts.AggregateType + "/" + opts.AggregateID
	case opts.AggregateType != "":
		scope = "all " + opts.AggregateType + " aggregates"
	}
	if plan.Events == 0 {
		fmt.Fprintf(env.stdout, "no published events of %s occurred in [%s, %s); nothing to replay\n",
			scope, opts.From.Format(time.RFC3339), opts.To.Format(time.RFC3339))
		return nil
	}
	fmt.Fprintf(env.stdout, "%d published events of %s (occurred %s .. %s) will be delivered again.\n"+
		"Workflows that completed stay one run; failed, terminated or timed-out ones run again (effects stay single).\n",
		plan.Events, scope, plan.First.UTC().Format(time.RFC3339), plan.Last.UTC().Format(time.RFC3339))
	ok, err := confirmed(env, *yes, fmt.Sprintf("Replay %d events? [y/N] ", plan.Events))
	if errors.Is(err, errNobodyToConfirm) {
		return usagef(fs, "%v: pass --yes to replay these %d events", err, plan.Events)
	}
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("not confirmed; nothing was replayed")
	}
	n, err := outbox.Replay(ctx, pool, opts)
	if err != nil {
		return err
	}
	env.logger.Info("outboxctl: events replayed", "events", n, "actor", env.actor,
		"from", opts.From, "to", opts.To, "aggregate_type", opts.AggregateType, "aggregate_id", opts.AggregateID)
	fmt.Fprintf(env.stdout, "replayed %d events; the relays publish them again (outboxctl status shows the replays pending)\n", n)
	return nil
}
