package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
)

// runReplay delivers the published events of a window again, after a
// confirmation (see outboxops.Replay for the semantics against Temporal).
func runReplay(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "replay", "replay --from TIME --to TIME [--aggregate ID] [--aggregate-type TYPE] [--yes]")
	from := fs.String("from", "", "window start, RFC 3339 (e.g. 2025-06-01T10:00:00Z), inclusive, on the events' occurred_at")
	to := fs.String("to", "", "window end, RFC 3339, exclusive")
	aggregate := fs.String("aggregate", "", "only this aggregate's events (e.g. an order id)")
	aggregateType := fs.String("aggregate-type", "", "only aggregates of this type (e.g. order); with --aggregate, its type, which may be left out when one type only has an aggregate of that id")
	yes := fs.Bool("yes", false, "do not ask for confirmation (required when stdin is not a terminal)")
	pos, err := parse(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "replay takes no arguments, got %q", pos)
	}
	var opts outboxops.ReplayOptions
	opts.AggregateID = *aggregate
	// An aggregate ID is unique only within its type, so --aggregate always
	// filters on a type: --aggregate-type's, or, left out, the one type
	// that has an aggregate of that id (resolveAggregateType). No type is
	// assumed: the outbox may hold any service's aggregates.
	typeSet := false
	fs.Visit(func(f *flag.Flag) { typeSet = typeSet || f.Name == "aggregate-type" })
	if typeSet {
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
	if opts.AggregateID != "" && opts.AggregateType == "" {
		types, err := aggregateTypes(ctx, pool, opts.AggregateID)
		if err != nil {
			return err
		}
		switch len(types) {
		case 0:
			fmt.Fprintf(env.stdout, "no events of any aggregate with id %q; nothing to replay (an order of the log needs its --aggregate-type too)\n", opts.AggregateID)
			return nil
		case 1:
			opts.AggregateType = types[0]
			fmt.Fprintf(env.stdout, "aggregate %s is of type %s, the only type with an aggregate of that id\n", opts.AggregateID, opts.AggregateType)
		default:
			return usagef(fs, "aggregates of %d types have the id %q (%s): say which with --aggregate-type", len(types), opts.AggregateID, strings.Join(types, ", "))
		}
	}
	plan, err := outboxops.PlanReplay(ctx, pool, opts)
	if err != nil {
		return err
	}
	// An order's events in the log (OUTFLOW_RELAY_SOURCE=log) are replayed
	// through a hold, one order at a time, under the same replay horizon.
	var logPlan outboxops.LogReplayPlan
	if opts.AggregateID != "" {
		if logPlan, err = outboxops.PlanReplayLog(ctx, pool, opts); err != nil {
			return err
		}
	}
	scope := "all aggregates"
	switch {
	case opts.AggregateID != "":
		scope = "aggregate " + opts.AggregateType + "/" + opts.AggregateID
	case opts.AggregateType != "":
		scope = "all " + opts.AggregateType + " aggregates"
	}
	if opts.AggregateID == "" {
		lg, err := outbox.LogStatus(ctx, pool)
		if err != nil {
			return err
		}
		if lg.Used {
			fmt.Fprintln(env.stdout, "the log's events (OUTFLOW_RELAY_SOURCE=log) are replayed one order at a time: name it with --aggregate and --aggregate-type")
		}
	}
	if plan.Events == 0 && logPlan.Events == 0 {
		fmt.Fprintf(env.stdout, "no published events of %s occurred in [%s, %s); nothing to replay\n",
			scope, opts.From.Format(time.RFC3339), opts.To.Format(time.RFC3339))
		return nil
	}
	if plan.Events > 0 {
		fmt.Fprintf(env.stdout, "%d published events of %s (occurred %s .. %s) will be delivered again.\n",
			plan.Events, scope, plan.First.UTC().Format(time.RFC3339), plan.Last.UTC().Format(time.RFC3339))
	}
	if logPlan.Events > 0 {
		fmt.Fprintf(env.stdout, "%d published log events of %s (sequence %d on, occurred %s .. %s) will be delivered again, in order, through a hold: the log replays the order's events from its first in the window to the newest delivered.\n",
			logPlan.Events, scope, logPlan.FromSequence, logPlan.First.UTC().Format(time.RFC3339), logPlan.Last.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(env.stdout, "Workflows that completed stay one run; failed, terminated or timed-out ones run again (effects stay single).")
	total := plan.Events + logPlan.Events
	ok, err := confirmed(env, *yes, fmt.Sprintf("Replay %d events? [y/N] ", total))
	if errors.Is(err, errNobodyToConfirm) {
		return usagef(fs, "%v: pass --yes to replay these %d events", err, total)
	}
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("not confirmed; nothing was replayed")
	}
	var n int64
	if plan.Events > 0 {
		if n, err = outboxops.Replay(ctx, pool, opts); err != nil {
			return err
		}
		env.logger.Info("outboxctl: events replayed", "events", n, "actor", env.actor,
			"from", opts.From, "to", opts.To, "aggregate_type", opts.AggregateType, "aggregate_id", opts.AggregateID)
	}
	if logPlan.Events > 0 {
		done, err := outboxops.ReplayLog(ctx, pool, opts)
		if err != nil {
			return err
		}
		env.logger.Info("outboxctl: log events replayed", "events", done.Events, "from_sequence", done.FromSequence, "actor", env.actor,
			"from", opts.From, "to", opts.To, "aggregate_type", opts.AggregateType, "aggregate_id", opts.AggregateID)
		n += done.Events
	}
	fmt.Fprintf(env.stdout, "replayed %d events; the relays publish them again (outboxctl status shows the replays pending)\n", n)
	return nil
}

// aggregateTypes returns the types of the aggregates whose id is id, from
// their events (outboxops.List). Past the list's bound it cannot tell whether
// a further type hides behind it, so it asks for --aggregate-type then.
func aggregateTypes(ctx context.Context, pool *pgxpool.Pool, id string) ([]string, error) {
	const bound = 10000
	events, err := outboxops.List(ctx, pool, outboxops.ListOptions{AggregateID: id, Limit: bound})
	if err != nil {
		return nil, err
	}
	var types []string
	for _, e := range events {
		if !slices.Contains(types, e.AggregateType) {
			types = append(types, e.AggregateType)
		}
	}
	if len(events) == bound && len(types) == 1 {
		return nil, fmt.Errorf("aggregate %s has %d events or more, too many to tell whether only type %s has an aggregate of that id; name it with --aggregate-type", id, bound, types[0])
	}
	slices.Sort(types)
	return types, nil
}
