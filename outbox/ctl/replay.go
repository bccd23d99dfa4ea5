package ctl

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/outboxops"
)

// runReplay delivers the published events of a window again, after
// printing the plan (proceed; see outboxops.Replay for the semantics
// against Temporal).
func runReplay(ctx context.Context, env *Env, args []string) error {
	fs := NewFlagSet(env, "replay", "replay --from TIME [--to TIME] [--aggregate ID] [--aggregate-type TYPE] [--yes]\n\n"+
		"TIME is "+timeForms+";\n"+
		"so `replay --since 2h` replays the last two hours.")
	var from, to string
	fs.StringVar(&from, "from", "", "window start `TIME`, inclusive, on the events' occurred_at (e.g. 2025-06-01T10:00:00Z, or 2h for two hours ago)")
	fs.StringVar(&from, "since", "", "the same as --from: a `TIME`")
	fs.StringVar(&to, "to", "", "window end `TIME`, exclusive (default now)")
	fs.StringVar(&to, "until", "", "the same as --to: a `TIME`")
	aggregate := fs.String("aggregate", "", "only this aggregate's events (e.g. an order id)")
	aggregateType := fs.String("aggregate-type", "", "only aggregates of this type (e.g. order); with --aggregate, its type, which may be left out when one type only has an aggregate of that id")
	yes := YesFlag(fs)
	pos, err := Parse(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return Usagef(fs, "replay takes no arguments, got %q", pos)
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
			return Usagef(fs, "--aggregate-type must not be empty")
		}
		opts.AggregateType = *aggregateType
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	fromName, toName := "--from", "--to"
	switch {
	case given["from"] && given["since"]:
		return Usagef(fs, "--from and --since are one flag: give one")
	case given["to"] && given["until"]:
		return Usagef(fs, "--to and --until are one flag: give one")
	case given["since"]:
		fromName = "--since"
	}
	if given["until"] {
		toName = "--until"
	}
	now := time.Now()
	if from == "" {
		return Usagef(fs, "--from (or --since) is mandatory: %s", timeForms)
	}
	if opts.From, err = timeArg(fs, fromName, from, now); err != nil {
		return err
	}
	opts.To = now
	if to != "" {
		if opts.To, err = timeArg(fs, toName, to, now); err != nil {
			return err
		}
	}
	if !opts.To.After(opts.From) {
		return Usagef(fs, "%s (%s) must be after %s (%s)", toName, opts.To.Format(time.RFC3339), fromName, opts.From.Format(time.RFC3339))
	}

	pool, err := OpenDB(ctx, env)
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
			fmt.Fprintf(env.Stdout, "no events of any aggregate with id %q; nothing to replay (an order of the log needs its --aggregate-type too)\n", opts.AggregateID)
			return nil
		case 1:
			opts.AggregateType = types[0]
			fmt.Fprintf(env.Stdout, "aggregate %s is of type %s, the only type with an aggregate of that id\n", opts.AggregateID, opts.AggregateType)
		default:
			return Usagef(fs, "aggregates of %d types have the id %q (%s): say which with --aggregate-type", len(types), opts.AggregateID, strings.Join(types, ", "))
		}
	}
	// The plan covers outbox_events' events and the log's, which the log
	// replays an order at a time through a hold (outboxops.PlanReplay),
	// under the same replay horizon.
	plan, err := outboxops.PlanReplay(ctx, pool, opts)
	if err != nil {
		return err
	}
	if writeReplayPlan(env.Stdout, plan, opts) == 0 {
		return nil
	}
	total := plan.Total()
	if ok, err := Proceed(env, *yes, Change{
		Question: fmt.Sprintf("Replay %d events? [y/N] ", total),
		Done:     "replayed",
		Todo:     fmt.Sprintf("replay these %d events", total),
	}); !ok {
		return err
	}
	n, err := outboxops.Replay(ctx, pool, opts)
	env.Logger.Info("outboxctl: events replayed", "events", n, "planned_events", plan.Events, "planned_log_events", plan.Log.Events,
		"log_from_sequence", plan.Log.FromSequence, "actor", env.Actor,
		"from", opts.From, "to", opts.To, "aggregate_type", opts.AggregateType, "aggregate_id", opts.AggregateID, "error", err)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "replayed %d events; the relays publish them again (outboxctl status shows the replays pending)\n", n)
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

// writeReplayPlan prints what replaying opts's window would deliver again
// (what `outboxctl replay` and the console show), and returns the number of
// events; 0 when there are none, which it says.
func writeReplayPlan(w io.Writer, plan outboxops.ReplayPlan, opts outboxops.ReplayOptions) int64 {
	scope := "all aggregates"
	switch {
	case opts.AggregateID != "":
		scope = "aggregate " + opts.AggregateType + "/" + opts.AggregateID
	case opts.AggregateType != "":
		scope = "all " + opts.AggregateType + " aggregates"
	}
	if plan.Log.HeldOrders > 0 {
		fmt.Fprintf(w, "%d orders of the log (relay source log) are under a hold and left out: `outboxctl list --quarantined` shows why; retry or skip their holds, then replay them.\n", plan.Log.HeldOrders)
	}
	if plan.Total() == 0 {
		fmt.Fprintf(w, "no published events of %s occurred in [%s, %s); nothing to replay\n",
			scope, opts.From.Format(time.RFC3339), opts.To.Format(time.RFC3339))
		return 0
	}
	if plan.Events > 0 {
		fmt.Fprintf(w, "%d published events of %s (occurred %s .. %s) will be delivered again.\n",
			plan.Events, scope, plan.First.UTC().Format(time.RFC3339), plan.Last.UTC().Format(time.RFC3339))
	}
	if lp := plan.Log; lp.Events > 0 && lp.FromSequence > 0 {
		fmt.Fprintf(w, "%d published log events of %s (sequence %d on, occurred %s .. %s) will be delivered again, in order, through a hold: the log replays the order's events from its first in the window to the newest delivered.\n",
			lp.Events, scope, lp.FromSequence, lp.First.UTC().Format(time.RFC3339), lp.Last.UTC().Format(time.RFC3339))
	} else if lp.Events > 0 {
		fmt.Fprintf(w, "%d published log events of %d orders of %s (occurred %s .. %s) will be delivered again, in order, through a hold per order: the log replays each order's events from its first in the window to the newest delivered.\n",
			lp.Events, lp.Orders, scope, lp.First.UTC().Format(time.RFC3339), lp.Last.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(w, "Workflows that completed stay one run; failed, terminated or timed-out ones run again (effects stay single).")
	return plan.Total()
}
