package ctl

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
// whole), marked as history once the event got past it (eventError). With --json it prints one JSON array of outboxops.EventInfo: the
// field names are the columns' (event_id, aggregate_type, ...,
// last_error) plus state, and the last error is whole.
func runList(ctx context.Context, env *Env, args []string) error {
	fs := NewFlagSet(env, "list", "list [--pending | --quarantined] [--aggregate ID] [--aggregate-type TYPE] [--limit N] [--json]")
	var opts outboxops.ListOptions
	fs.BoolVar(&opts.Pending, "pending", false, "only unpublished events that are not quarantined or skipped, the log source's after them (after their partition's cursor, or held by a retrying hold)")
	fs.BoolVar(&opts.Quarantined, "quarantined", false, "only quarantined events (waiting for retry or skip), the log source's quarantined holds after them, by the event each is stuck on")
	fs.StringVar(&opts.AggregateID, "aggregate", "", "only the events of aggregates with this id (e.g. an order id), in sequence order")
	fs.StringVar(&opts.AggregateType, "aggregate-type", "", "only aggregates of this type (e.g. order); default every type")
	fs.IntVar(&opts.Limit, "limit", 100, "at most this many events (1 to 10000); without filters, the newest")
	asJSON := fs.Bool("json", false, "print one JSON array of the events, each with every bookkeeping column under its column name and its state, the last error whole")
	pos, err := Parse(env, fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return Usagef(fs, "list takes no arguments, got %q (did you mean --aggregate %s?)", pos, pos[0])
	case opts.Pending && opts.Quarantined:
		return Usagef(fs, "--pending and --quarantined exclude each other")
	case opts.Limit < 1 || opts.Limit > 10000:
		return Usagef(fs, "--limit %d is out of range; use 1 to 10000", opts.Limit)
	}
	pool, err := OpenDB(ctx, env)
	if err != nil {
		return err
	}
	defer pool.Close()
	// The log source's quarantined holds are listed with the quarantined
	// events, by their heads (the event each is stuck on), after them; its
	// pending events with the pending ones: those after their partition's
	// cursor, and those a retrying hold owns (outboxops.ListAll).
	l, err := outboxops.ListAll(ctx, pool, opts)
	if err != nil {
		return err
	}
	events, holds, logged := l.Events, l.LogHolds, l.LogEvents
	if *asJSON {
		// An array even when nothing matches, so `jq length` says 0.
		out := []any{}
		for _, e := range events {
			out = append(out, e)
		}
		for _, h := range holds {
			out = append(out, logHoldJSON{LogHold: h, State: outboxops.StateQuarantined, Source: "log"})
		}
		for _, e := range logged {
			out = append(out, logEventJSON{LogEvent: e, State: e.State(), Source: "log"})
		}
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if err := writeEvents(env.Stdout, "", events); err != nil {
		return err
	}
	if err := writeLogHolds(env.Stdout, "", holds); err != nil {
		return err
	}
	if err := writeLogEvents(env.Stdout, logged); err != nil {
		return err
	}
	if len(events)+len(holds)+len(logged) == 0 {
		fmt.Fprintln(env.Stderr, "no events match")
	}
	return nil
}

// logHoldJSON is a quarantined log hold in `list --json`: the keys of
// outboxops.EventInfo where they mean the same (event_id, aggregate_type,
// aggregate_id, aggregate_sequence, event_type, attempt_count, last_error,
// quarantined_at, state), with its partition and source "log".
type logHoldJSON struct {
	outboxops.LogHold
	State  outboxops.EventState `json:"state"`
	Source string               `json:"source"`
}

// logEventJSON is a log event in `list --pending --json`: the keys of
// outboxops.EventInfo where they mean the same, its state ("pending" after
// its partition's cursor, "held" by a retrying hold), its key and
// partition, and source "log".
type logEventJSON struct {
	outboxops.LogEvent
	State  string `json:"state"`
	Source string `json:"source"`
}

// writeLogEvents prints log events one a line, like writeEvents: id, type,
// aggregate, sequence, attempts, the state with its partition, and a held
// event's last error, truncated.
func writeLogEvents(w io.Writer, events []outboxops.LogEvent) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, e := range events {
		fmt.Fprintf(tw, "%s\t%s\t%s/%s\tseq=%d\tattempts=%d\t%s (log, partition %d)\t%s\n",
			e.ID, e.Type, e.AggregateType, e.AggregateID, e.Sequence, e.Attempts, e.State(), e.Partition, lastError(e.LastError))
	}
	return tw.Flush()
}

// writeLogHolds prints quarantined log holds one a line, like writeEvents:
// the head's id, type, aggregate, sequence, the hold's attempts, "quarantined
// (log hold)" with its partition and the last error, truncated.
func writeLogHolds(w io.Writer, indent string, holds []outboxops.LogHold) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, h := range holds {
		id, typ, seq := "-", "-", "-"
		if h.EventID != nil {
			id, typ, seq = h.EventID.String(), *h.EventType, strconv.FormatInt(*h.Sequence, 10)
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s/%s\tseq=%s\tattempts=%d\tquarantined (log hold, partition %d)\t%s\n",
			indent, id, typ, h.AggregateType, h.AggregateID, seq, h.Attempts, h.Partition, lastError(h.LastError))
	}
	return tw.Flush()
}

// writeEvents prints events one a line, each after indent, in columns: id,
// type, aggregate, sequence, attempts, state and the last error, truncated.
func writeEvents(w io.Writer, indent string, events []outboxops.EventInfo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, e := range events {
		fmt.Fprintf(tw, "%s%s\t%s\t%s/%s\tseq=%d\tattempts=%d\t%s\t%s\n",
			indent, e.ID, e.Type, e.AggregateType, e.AggregateID, e.Sequence, e.Attempts, e.State, eventError(e))
	}
	return tw.Flush()
}

// eventError renders an event's last_error (lastError) as what it is: the
// error of now while the event fails, and history once it got past it. A
// published event's error is error_before_publish=, and an unpublished
// event's whose attempts an operator's retry (or a replay) reset is
// error_before_retry=: neither fails now. A skipped event's stays
// last_error=, the failure it was given up for.
func eventError(e outboxops.EventInfo) string {
	switch {
	case e.LastError == "":
		return ""
	case e.State == outboxops.StatePublished:
		return "error_before_publish=" + strings.TrimPrefix(lastError(e.LastError), "last_error=")
	case e.State != outboxops.StateSkipped && e.Attempts == 0:
		return "error_before_retry=" + strings.TrimPrefix(lastError(e.LastError), "last_error=")
	}
	return lastError(e.LastError)
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
