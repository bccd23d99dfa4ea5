package outboxops

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// ListOptions selects the events [List] returns. Pending and Quarantined
// are exclusive; with neither, every event is listed (published and skipped
// ones too).
type ListOptions struct {
	// Pending lists unpublished events that are neither quarantined nor
	// skipped: waiting, blocked, in flight or backing off.
	Pending bool
	// Quarantined lists the events waiting for an operator.
	Quarantined bool
	// AggregateType restricts the list to one aggregate type. Optional:
	// defaulted to every type.
	AggregateType string
	// AggregateID restricts the list to one aggregate (e.g. an order ID).
	// Optional: defaulted to every aggregate.
	AggregateID string
	// Limit is the most events returned, 1 to 10000. Optional: defaulted to
	// [ListLimitDefault] (100).
	Limit int
}

// ListLimitDefault is the default of [ListOptions.Limit].
const ListLimitDefault = 100

// listLimitMax bounds [ListOptions.Limit].
const listLimitMax = 10000

// List returns outbox events with their state, oldest first; an unfiltered
// list (neither Pending, Quarantined nor an aggregate) returns the newest
// Limit events, still oldest first. One aggregate's events come in sequence
// order.
func List(ctx context.Context, db DB, opts ListOptions) ([]EventInfo, error) {
	opts.Limit = cmp.Or(opts.Limit, ListLimitDefault)
	switch {
	case opts.Pending && opts.Quarantined:
		return nil, fmt.Errorf("outbox: list: Pending and Quarantined exclude each other; ask for one or neither")
	case opts.Limit < 1 || opts.Limit > listLimitMax:
		return nil, fmt.Errorf("outbox: list: limit %d is out of range; use 1 to %d (default %d)", opts.Limit, listLimitMax, ListLimitDefault)
	}
	filter := "all"
	switch {
	case opts.Pending:
		filter = "pending"
	case opts.Quarantined:
		filter = "quarantined"
	}
	newest := filter == "all" && opts.AggregateID == "" && opts.AggregateType == ""
	rows, err := qOpsList.All(ctx, db, listArgs{
		Filter:        filter,
		AggregateID:   opts.AggregateID,
		AggregateType: opts.AggregateType,
		MaxEvents:     opts.Limit,
		NewestFirst:   newest,
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: list: %w", err)
	}
	events := make([]EventInfo, len(rows))
	for i, r := range rows {
		events[i] = r.eventInfo()
	}
	if newest {
		slices.Reverse(events)
	}
	if opts.AggregateID != "" {
		// Within an aggregate the sequence is the order; occurred_at (the
		// enqueuing transaction's clock) may disagree with it.
		slices.SortStableFunc(events, func(a, b EventInfo) int {
			if c := strings.Compare(a.AggregateType, b.AggregateType); c != 0 {
				return c
			}
			return cmp.Compare(a.Sequence, b.Sequence)
		})
	}
	return events, nil
}

// Listing is what [ListAll] found: outbox_events' events, then the log
// source's.
type Listing struct {
	// Events are outbox_events' events, as [List] returns them.
	Events []EventInfo
	// LogHolds are, with Quarantined, the log's quarantined holds, oldest
	// quarantine first, each by the event it is stuck on (its head), which
	// [Retry] and [Skip] take.
	LogHolds []LogHold
	// LogEvents are, with Pending, the log's unpublished events that wait
	// for no operator, oldest key first: after their partition's cursor
	// ([StatePending]) or owned by a hold that is not quarantined
	// ([StateHeld]: its worker publishes them after a backoff).
	LogEvents []LogEvent
}

// Len is the number of entries: events, holds and log events.
func (l Listing) Len() int { return len(l.Events) + len(l.LogHolds) + len(l.LogEvents) }

// ListAll is [List] over every table a source keeps events in: with
// Quarantined, the log's quarantined holds follow outbox_events'
// quarantined events; with Pending, the log's pending and held events
// follow outbox_events' pending ones. The filters (AggregateType,
// AggregateID) apply to both, and Limit bounds the whole listing,
// outbox_events' events first. An unfiltered list (neither Pending nor
// Quarantined) is outbox_events' alone: the log's published events are
// read by position, not listed by time (`outboxctl show` finds one by ID).
func ListAll(ctx context.Context, db DB, opts ListOptions) (Listing, error) {
	opts.Limit = cmp.Or(opts.Limit, ListLimitDefault)
	events, err := List(ctx, db, opts)
	if err != nil {
		return Listing{}, err
	}
	l := Listing{Events: events}
	room := opts.Limit - len(events)
	switch {
	case room <= 0:
	case opts.Quarantined:
		holds, err := QuarantinedLogHolds(ctx, db, LogHoldFilter{AggregateType: opts.AggregateType})
		if err != nil {
			return Listing{}, fmt.Errorf("outbox: list: %w", err)
		}
		for _, h := range holds {
			if (opts.AggregateID == "" || h.AggregateID == opts.AggregateID) && len(l.LogHolds) < room {
				l.LogHolds = append(l.LogHolds, h)
			}
		}
	case opts.Pending:
		l.LogEvents, err = PendingLogEvents(ctx, db, PendingLogFilter{
			AggregateType: opts.AggregateType, AggregateID: opts.AggregateID, Limit: room})
		if err != nil {
			return Listing{}, fmt.Errorf("outbox: list: %w", err)
		}
	}
	return l, nil
}
