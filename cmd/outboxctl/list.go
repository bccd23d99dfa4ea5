package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/outflow/outflow/outbox/outboxops"
)

// lastErrorWidth bounds last_error in list output; `outboxctl show`,
// `list --json` and the database keep it whole (up to 1000 characters).
const lastErrorWidth = 80

// runList prints events one a line: id, type, aggregate, sequence, attempts,
// state and the last error, truncated (`outboxctl show EVENT_ID` has it
// whole). With --json it prints one JSON array of outboxops.EventInfo: the
// field names are the columns' (event_id, aggregate_type, ...,
// last_error) plus state, and the last error is whole.
func runList(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "list", "list [--pending | --quarantined] [--aggregate ID] [--aggregate-type TYPE] [--limit N] [--json]")
	var opts outboxops.ListOptions
	fs.BoolVar(&opts.Pending, "pending", false, "only unpublished events that are not quarantined or skipped")
	fs.BoolVar(&opts.Quarantined, "quarantined", false, "only quarantined events (waiting for retry or skip)")
	fs.StringVar(&opts.AggregateID, "aggregate", "", "only the events of aggregates with this id (e.g. an order id), in sequence order")
	fs.StringVar(&opts.AggregateType, "aggregate-type", "", "only aggregates of this type (e.g. order); default every type")
	fs.IntVar(&opts.Limit, "limit", 100, "at most this many events (1 to 10000); without filters, the newest")
	asJSON := fs.Bool("json", false, "print one JSON array of the events, each with every bookkeeping column under its column name and its state, the last error whole")
	pos, err := parse(env, fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef(fs, "list takes no arguments, got %q (did you mean --aggregate %s?)", pos, pos[0])
	case opts.Pending && opts.Quarantined:
		return usagef(fs, "--pending and --quarantined exclude each other")
	case opts.Limit < 1 || opts.Limit > 10000:
		return usagef(fs, "--limit %d is out of range; use 1 to 10000", opts.Limit)
	}
	pool, err := openDB(ctx, env)
	if err != nil {
		return err
	}
	defer pool.Close()
	events, err := outboxops.List(ctx, pool, opts)
	if err != nil {
		return err
	}
	if *asJSON {
		// An array even when nothing matches, so `jq length` says 0.
		if events == nil {
			events = []outboxops.EventInfo{}
		}
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(events)
	}
	if err := writeEvents(env.stdout, "", events); err != nil {
		return err
	}
	if len(events) == 0 {
		fmt.Fprintln(env.stderr, "no events match")
	}
	return nil
}

// writeEvents prints events one a line, each after indent, in columns: id,
// type, aggregate, sequence, attempts, state and the last error, truncated.
func writeEvents(w io.Writer, indent string, events []outboxops.EventInfo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, e := range events {
		fmt.Fprintf(tw, "%s%s\t%s\t%s/%s\tseq=%d\tattempts=%d\t%s\t%s\n",
			indent, e.ID, e.Type, e.AggregateType, e.AggregateID, e.Sequence, e.Attempts, e.State, lastError(e.LastError))
	}
	return tw.Flush()
}

// lastError renders an error on one line, bounded, quoted so a space-split
// line keeps its columns; empty when there is none.
func lastError(s string) string {
	if s == "" {
		return ""
	}
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > lastErrorWidth {
		s = string(r[:lastErrorWidth-1]) + "…"
	}
	return "last_error=" + strconv.Quote(s)
}
