package outboxops

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ListOptions selects the events [List] returns. Pending, Held,
// Quarantined and Skipped are exclusive; with none, every event is listed
// (published and skipped ones too).
type ListOptions struct {
	// Pending lists unpublished events that are neither quarantined nor
	// skipped: waiting, blocked, in flight or backing off.
	Pending bool
	// Held lists the pending events an unpublished predecessor of their
	// aggregate holds back ([StateBlocked]; in the log, [StateHeld]).
	Held bool
	// Quarantined lists the events waiting for an operator.
	Quarantined bool
	// Skipped lists the events operators gave up on.
	Skipped bool
	// EventType restricts the list to one event type. Optional: defaulted
	// to every type.
	EventType string
	// ErrorContains restricts the list to events whose last_error contains
	// it, ignoring case. Optional: defaulted to any error, or none.
	ErrorContains string
	// OccurredBefore restricts the list to events that occurred before it
	// (older than an age). Optional: the zero time is any time.
	OccurredBefore time.Time
	// After, when set, starts the list after this key: the next page of a
	// list whose last event had this key ([EventInfo.Key]). Only with a
	// filter (Pending, Held, Quarantined, Skipped or an aggregate), whose
	// list is the oldest first.
	After *ListKey
	// LogAfter, when set, starts [ListAll]'s entries of the log after this
	// key ([LogEvent.Key], [LogHold.Key]); [Listing.Next] sets it and
	// After for the next page. List ignores it.
	LogAfter *LogKey
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

// ListKey is an event's place in a filtered list's order (oldest first),
// the keyset a next page starts after ([ListOptions.After]).
type ListKey struct {
	OccurredAt    time.Time `json:"occurred_at"`
	AggregateType string    `json:"aggregate_type"`
	AggregateID   string    `json:"aggregate_id"`
	Sequence      int64     `json:"aggregate_sequence"`
}

// Key is e's place in a filtered list's order.
func (e EventInfo) Key() ListKey {
	return ListKey{OccurredAt: e.OccurredAt, AggregateType: e.AggregateType, AggregateID: e.AggregateID, Sequence: e.Sequence}
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
	filters := 0
	filter := "all"
	for name, on := range map[string]bool{"pending": opts.Pending, "held": opts.Held, "quarantined": opts.Quarantined, "skipped": opts.Skipped} {
		if on {
			filters++
			filter = name
		}
	}
	switch {
	case filters > 1:
		return nil, fmt.Errorf("outbox: list: Pending, Held, Quarantined and Skipped exclude each other; ask for one or none")
	case opts.Limit < 1 || opts.Limit > listLimitMax:
		return nil, fmt.Errorf("outbox: list: limit %d is out of range; use 1 to %d (default %d)", opts.Limit, listLimitMax, ListLimitDefault)
	}
	newest := filter == "all" && opts.AggregateID == "" && opts.AggregateType == "" &&
		opts.EventType == "" && opts.ErrorContains == "" && opts.OccurredBefore.IsZero()
	if newest && opts.After != nil {
		return nil, fmt.Errorf("outbox: list: After pages a filtered list only (the unfiltered one is the newest events); set a filter")
	}
	args := listArgs{
		Filter:        filter,
		AggregateID:   opts.AggregateID,
		AggregateType: opts.AggregateType,
		MaxEvents:     opts.Limit,
		NewestFirst:   newest,
		EventType:     opts.EventType,
		ErrorContains: opts.ErrorContains,
	}
	if !opts.OccurredBefore.IsZero() {
		args.OccurredBefore = &opts.OccurredBefore
	}
	if k := opts.After; k != nil {
		args.AfterSet, args.AfterOccurredAt, args.AfterAggregateType, args.AfterAggregateID, args.AfterSequence =
			true, k.OccurredAt, k.AggregateType, k.AggregateID, k.Sequence
	}
	q := qOpsList
	if filter == "held" {
		q = qOpsListHeld
	}
	rows, err := q.All(ctx, db, args)
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
// source's. A page holds outbox_events' events first and the log's after
// them, each table paged by its own key ([Listing.Next]).
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

// Head is the listing's first n entries, in its order: outbox_events'
// events, then the log's holds, then its events.
func (l Listing) Head(n int) Listing {
	take := func(k int) int { k = min(k, n); n -= k; return k }
	return Listing{
		Events:    l.Events[:take(len(l.Events))],
		LogHolds:  l.LogHolds[:take(len(l.LogHolds))],
		LogEvents: l.LogEvents[:take(len(l.LogEvents))],
	}
}

// Next is the options of the page after l, a page [ListAll] returned for
// opts: each table's list starts after this page's last entry of it (or
// where this page's started, when it had none). Listing a page of Limit-1
// entries with Limit set one higher, as the console does, tells whether
// there is a next page at all.
func (l Listing) Next(opts ListOptions) ListOptions {
	if n := len(l.Events); n > 0 {
		k := l.Events[n-1].Key()
		opts.After = &k
	}
	switch {
	case len(l.LogHolds) > 0:
		k := l.LogHolds[len(l.LogHolds)-1].Key()
		opts.LogAfter = &k
	case len(l.LogEvents) > 0:
		k := l.LogEvents[len(l.LogEvents)-1].Key()
		opts.LogAfter = &k
	}
	return opts
}

// ListAll is [List] over every table a source keeps events in: with
// Quarantined, the log's quarantined holds follow outbox_events'
// quarantined events; with Pending, the log's pending and held events
// follow outbox_events' pending ones, with Held its held ones. The filters
// (AggregateType, AggregateID, EventType, ErrorContains, OccurredBefore)
// apply to both, and Limit bounds the whole listing, outbox_events'
// events first: the log's entries fill the room they leave. After and
// LogAfter page each table by its own key ([Listing.Next]). An unfiltered
// list (neither Pending, Held nor Quarantined) is outbox_events' alone:
// the log's published events are read by position, not listed by time
// (`outboxctl show` finds one by ID).
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
			if (opts.AggregateID == "" || h.AggregateID == opts.AggregateID) && len(l.LogHolds) < room &&
				(opts.LogAfter == nil || holdAfter(h, *opts.LogAfter)) &&
				opts.logMatches(deref(h.EventType), h.LastError, h.OccurredAt) {
				l.LogHolds = append(l.LogHolds, h)
			}
		}
	case opts.Pending || opts.Held:
		// Read on while the filters leave room and the log has more.
		f := PendingLogFilter{AggregateType: opts.AggregateType, AggregateID: opts.AggregateID, After: opts.LogAfter, Limit: room}
		for len(l.LogEvents) < room {
			logged, last, err := pendingLogPage(ctx, db, f)
			if err != nil {
				return Listing{}, fmt.Errorf("outbox: list: %w", err)
			}
			for _, e := range logged {
				if (!opts.Held || e.State() == "held") && opts.logMatches(e.Type, e.LastError, &e.OccurredAt) && len(l.LogEvents) < room {
					l.LogEvents = append(l.LogEvents, e)
				}
			}
			if last == nil {
				break
			}
			f.After = last
		}
	}
	return l, nil
}

// logMatches applies the filters List applies in SQL to an entry of the
// log: its event type, last error and time.
func (opts ListOptions) logMatches(eventType, lastError string, occurredAt *time.Time) bool {
	switch {
	case opts.EventType != "" && eventType != opts.EventType:
		return false
	case opts.ErrorContains != "" && !strings.Contains(strings.ToLower(lastError), strings.ToLower(opts.ErrorContains)):
		return false
	case !opts.OccurredBefore.IsZero() && (occurredAt == nil || !occurredAt.Before(opts.OccurredBefore)):
		return false
	}
	return true
}
