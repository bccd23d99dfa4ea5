package ctl

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/outboxops"
)

// runRetry makes a quarantined or backing-off event available now, or, with
// --quarantined, every quarantined event a filter selects (runRetryQuarantined).
func runRetry(ctx context.Context, env *Env, args []string) error {
	fs := NewFlagSet(env, "retry", "retry EVENT_ID\n       outboxctl retry --quarantined [--since TIME] [--error-contains TEXT] [--aggregate-type TYPE] [--reason TEXT] [--batch-size N] [--yes]")
	quarantined := fs.Bool("quarantined", false, "retry every quarantined event the filters select, in batches, and the log source's quarantined holds they select, after a count and a confirmation (audited)")
	var filter outboxops.RetryFilter
	since := fs.String("since", "", "with --quarantined: only events quarantined at or after this `TIME` (when an outage began): RFC 3339, or a duration before now such as 2h")
	fs.StringVar(&filter.ErrorContains, "error-contains", "", "with --quarantined: only events whose last_error contains this text, ignoring case (e.g. Unavailable)")
	fs.StringVar(&filter.AggregateType, "aggregate-type", "", "with --quarantined: only events of aggregates of this type (e.g. order)")
	reason := fs.String("reason", "", "with --quarantined: why, recorded in the audit row (e.g. \"Temporal outage INC-42 resolved\")")
	actor := fs.String("actor", env.Actor, "with --quarantined: who asked, recorded in the audit row (retried_by)")
	batch := fs.Int("batch-size", outboxops.RetryBatchSizeDefault, "with --quarantined: events per batch, each batch one short transaction (1 to 100000)")
	yes := YesFlag(fs)
	pos, err := Parse(env, fs, args)
	if err != nil {
		return err
	}
	if !*quarantined {
		var bulkOnly []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "database-url" && f.Name != "yes" {
				bulkOnly = append(bulkOnly, "--"+f.Name)
			}
		})
		if len(bulkOnly) > 0 {
			return Usagef(fs, "%s: only with --quarantined (retry EVENT_ID retries one event, whatever its error)", strings.Join(bulkOnly, ", "))
		}
		return retryOne(ctx, env, fs, pos, *yes)
	}
	switch {
	case len(pos) > 0:
		return Usagef(fs, "--quarantined takes no EVENT_ID, got %q: retry one event with `outboxctl retry EVENT_ID`, or narrow --quarantined with --since, --error-contains, --aggregate-type", pos)
	case strings.TrimSpace(*actor) == "":
		return Usagef(fs, "--actor may not be empty")
	case *batch < 1 || *batch > 100000:
		return Usagef(fs, "--batch-size %d is out of range; use 1 to 100000", *batch)
	}
	if *since != "" {
		if filter.Since, err = timeArg(fs, "--since", *since, time.Now()); err != nil {
			return err
		}
	}
	return runRetryQuarantined(ctx, env, outboxops.RetryQuarantinedOptions{
		RetryFilter: filter, Actor: *actor, Reason: *reason, BatchSize: *batch,
	}, *yes)
}

// retryOne retries the event EVENT_ID names: of outbox_events, or the
// log's quarantined hold it is stuck on. Its plan is the retry rehearsed
// (refusals included), then proceed decides.
func retryOne(ctx context.Context, env *Env, fs *flag.FlagSet, pos []string, yes bool) error {
	id, err := eventIDArg(fs, pos)
	if err != nil {
		return err
	}
	pool, err := OpenDB(ctx, env)
	if err != nil {
		return err
	}
	defer pool.Close()
	var c outboxops.Change
	if err := rehearse(ctx, pool, func(tx pgx.Tx) (err error) {
		c, err = outboxops.Retry(ctx, tx, id)
		return err
	}); err != nil {
		return err
	}
	writeRetryPlan(env.Stdout, id, c)
	if ok, err := Proceed(env, yes, Change{Question: "Retry it? [y/N] ", Done: "retried", Todo: "retry it"}); !ok {
		return err
	}
	if c, err = outboxops.Retry(ctx, pool, id); err != nil {
		return err
	}
	if e := c.Log; e != nil {
		// The log's quarantined hold the event is stuck on: its attempts
		// went back to 0, and its worker publishes the event again.
		env.Logger.Info("outboxctl: log hold retried", "event_id", id, "actor", env.Actor,
			"aggregate_type", e.AggregateType, "aggregate_id", e.AggregateID, "aggregate_sequence", e.Sequence,
			"partition", e.Partition, "previous_attempts", e.Attempts, "last_error", e.LastError)
		fmt.Fprintf(env.Stdout, "retried the log hold of %s/%s (stuck on %s, %s seq=%d): quarantined -> held, attempts %d -> 0; its hold worker publishes it again\n",
			e.AggregateType, e.AggregateID, id, e.Type, e.Sequence, e.Attempts)
		return nil
	}
	env.Logger.Info("outboxctl: event retried", "event_id", id, "actor", env.Actor,
		"aggregate_type", c.Before.AggregateType, "aggregate_id", c.Before.AggregateID, "aggregate_sequence", c.Before.Sequence,
		"previous_state", c.Before.State, "previous_attempts", c.Before.Attempts, "last_error", c.Before.LastError)
	fmt.Fprintf(env.Stdout, "retried %s (%s %s/%s seq=%d): %s -> %s, attempts %d -> %d; relays were woken\n",
		id, c.After.Type, c.After.AggregateType, c.After.AggregateID, c.After.Sequence,
		c.Before.State, c.After.State, c.Before.Attempts, c.After.Attempts)
	return nil
}

// runRetryQuarantined prints how many quarantined events the filter
// selects, with a sample, and retries them as proceed decides: without
// --yes and without a terminal it is a dry run that changes nothing.
func runRetryQuarantined(ctx context.Context, env *Env, opts outboxops.RetryQuarantinedOptions, yes bool) error {
	pool, err := OpenDB(ctx, env)
	if err != nil {
		return err
	}
	defer pool.Close()
	plan, err := outboxops.PlanRetryQuarantined(ctx, pool, opts.RetryFilter)
	if err != nil {
		return err
	}
	total, err := writeRetryQuarantinedPlan(env.Stdout, plan, opts.RetryFilter)
	if err != nil || total == 0 {
		return err
	}
	if ok, err := Proceed(env, yes, Change{
		Question: fmt.Sprintf("Retry %d events? [y/N] ", total),
		Done:     "retried",
		Todo:     fmt.Sprintf("retry these %d events", total),
	}); !ok {
		return err
	}
	start := time.Now()
	opts.OnBatch = func(b outboxops.RetryBatch) {
		fmt.Fprintf(env.Stdout, "batch %d: retried %d events (%d of ~%d)\n", b.Number, b.Retried, b.Total, plan.Events)
	}
	res, err := outboxops.RetryQuarantined(ctx, pool, opts)
	for _, h := range res.LogHolds {
		env.Logger.Info("outboxctl: log hold retried", "event_id", h.EventID, "audit_id", res.AuditID, "actor", opts.Actor, "reason", opts.Reason,
			"aggregate_type", h.AggregateType, "aggregate_id", h.AggregateID, "partition", h.Partition,
			"previous_attempts", h.Attempts, "last_error", h.LastError)
	}
	env.Logger.Info("outboxctl: quarantined events retried", "events", res.Retried, "batches", res.Batches, "log_holds", len(res.LogHolds), "audit_id", res.AuditID,
		"actor", opts.Actor, "reason", opts.Reason, "since", opts.Since, "error_contains", opts.ErrorContains, "aggregate_type", opts.AggregateType,
		"elapsed", time.Since(start).Round(time.Millisecond), "error", err)
	if err != nil {
		return fmt.Errorf("%w (the batches before the error are retried; run the command again to retry the rest)", err)
	}
	fmt.Fprintf(env.Stdout, "retried %d quarantined events in %d batches in %s (audit id %d, by %s); relays were woken\n",
		res.Retried, res.Batches, time.Since(start).Round(time.Millisecond), res.AuditID, strings.TrimSpace(opts.Actor))
	if len(res.LogHolds) > 0 {
		fmt.Fprintf(env.Stdout, "retried %d quarantined log holds (audit id %d)\n", len(res.LogHolds), res.AuditID)
	}
	return nil
}

// describeRetryFilter says in words which events a filter selects.
func describeRetryFilter(f outboxops.RetryFilter) string {
	parts := []string{"all aggregates"}
	if f.AggregateType != "" {
		parts[0] = "all " + f.AggregateType + " aggregates"
	}
	if f.ErrorContains != "" {
		parts = append(parts, "last_error contains "+strconv.Quote(f.ErrorContains))
	}
	if !f.Since.IsZero() {
		parts = append(parts, "quarantined since "+f.Since.UTC().Format(time.RFC3339))
	}
	return strings.Join(parts, ", ")
}

// writeRetryPlan prints the plan of retrying the event id, from the retry
// rehearsed (c): what `outboxctl retry EVENT_ID` and the console show.
func writeRetryPlan(w io.Writer, id uuid.UUID, c outboxops.Change) {
	if e := c.Log; e != nil {
		fmt.Fprintf(w, "plan: retry the log hold of %s/%s (stuck on %s, %s seq=%d): quarantined -> held, attempts %d -> 0\n",
			e.AggregateType, e.AggregateID, id, e.Type, e.Sequence, e.Attempts)
		return
	}
	fmt.Fprintf(w, "plan: retry %s (%s %s/%s seq=%d): %s -> %s, attempts %d -> %d\n",
		id, c.After.Type, c.After.AggregateType, c.After.AggregateID, c.After.Sequence,
		c.Before.State, c.After.State, c.Before.Attempts, c.After.Attempts)
}

// writeRetryQuarantinedPlan prints how many quarantined events and log
// holds the filter f selects, with a sample (what `outboxctl retry
// --quarantined` and the console show), and returns their number; 0 when
// nothing matches, which it says.
func writeRetryQuarantinedPlan(w io.Writer, plan outboxops.RetryPlan, f outboxops.RetryFilter) (int64, error) {
	scope := describeRetryFilter(f)
	holds := plan.LogHolds
	if plan.Events == 0 && len(holds) == 0 {
		fmt.Fprintf(w, "no quarantined events match (%s); nothing to retry\n", scope)
		return 0, nil
	}
	if plan.Events > 0 {
		fmt.Fprintf(w, "%d quarantined events (%s; quarantined %s .. %s) will be retried: available now, attempts reset, last_error kept.\n",
			plan.Events, scope, plan.First.UTC().Format(time.RFC3339), plan.Last.UTC().Format(time.RFC3339))
		if err := writeEvents(w, "  ", plan.Sample); err != nil {
			return 0, err
		}
		if more := plan.Events - int64(len(plan.Sample)); more > 0 {
			fmt.Fprintf(w, "  … and %d more (outboxctl list --quarantined shows them)\n", more)
		}
	}
	if len(holds) > 0 {
		// The log source's quarantined holds, by the event each is stuck on.
		fmt.Fprintf(w, "%d quarantined log holds (%s; quarantined %s .. %s) will be retried: attempts reset, their hold workers publish again.\n",
			len(holds), scope, holds[0].QuarantinedAt.UTC().Format(time.RFC3339), holds[len(holds)-1].QuarantinedAt.UTC().Format(time.RFC3339))
		sample := holds[:min(len(holds), outboxops.RetryPlanSample)]
		if err := writeLogHolds(w, "  ", sample); err != nil {
			return 0, err
		}
		if more := len(holds) - len(sample); more > 0 {
			fmt.Fprintf(w, "  … and %d more (outboxctl list --quarantined shows them)\n", more)
		}
	}
	return plan.Events + int64(len(holds)), nil
}
