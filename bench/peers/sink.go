package main

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
)

// orderTracker counts deliveries that reach the sink out of their order's
// sequence: an event whose Seq is below the highest Seq already delivered
// for its order (a later event overtook it).
type orderTracker struct {
	highest    map[string]int64
	outOfOrder int
}

func newOrderTracker() *orderTracker { return &orderTracker{highest: map[string]int64{}} }

// observe records one delivery and reports whether it was out of order.
func (t *orderTracker) observe(order string, seq int64) bool {
	if seq < t.highest[order] {
		t.outOfOrder++
		return true
	}
	t.highest[order] = seq
	return false
}

// recorder is a sink that counts: every delivery, per event, in arrival
// order, with its arrival time. It wraps next (nil: a no-op sink), and only
// records a delivery next accepted.
type recorder struct {
	next Sink

	mu         sync.Mutex
	order      *orderTracker
	arrived    map[uuid.UUID]time.Time
	deliveries int
	// want closes done when this many distinct events have arrived.
	want int
	done chan struct{}
	// expect, when set, are the events counted: another one (an earlier
	// phase's, left in the contender's table) is passed to next and not
	// counted, so it neither stops the timer early nor counts as a
	// duplicate.
	expect map[uuid.UUID]bool
	// others counts the deliveries of events outside expect.
	others int
	// firstLate counts the first deliveries of events that a later event
	// of their order overtook (redeliveries aside).
	firstLate int
	// times are the counted deliveries' arrival times, in arrival order:
	// the crash round's first delivery after the crash.
	times []time.Time
}

func newRecorder(next Sink, want int) *recorder {
	return &recorder{next: next, order: newOrderTracker(), arrived: map[uuid.UUID]time.Time{}, want: want, done: make(chan struct{})}
}

// newBacklogRecorder is a recorder that counts only the events of backlog
// and is done once each of them arrived.
func newBacklogRecorder(next Sink, backlog []Event) *recorder {
	r := newRecorder(next, len(backlog))
	r.expect = make(map[uuid.UUID]bool, len(backlog))
	for _, e := range backlog {
		r.expect[e.ID] = true
	}
	return r
}

// Deliver implements Sink.
func (r *recorder) Deliver(ctx context.Context, e Event) error {
	if r.next != nil {
		if err := r.next.Deliver(ctx, e); err != nil {
			return err
		}
	}
	r.deliverAt(e, time.Now())
	return nil
}

// deliverAt records a delivery of e that arrived at now: a consumer in
// another process (the crash round's) says when its sink got each event.
func (r *recorder) deliverAt(e Event, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.expect != nil && !r.expect[e.ID] {
		r.others++
		return
	}
	r.deliveries++
	r.times = append(r.times, now)
	late := r.order.observe(e.OrderID, e.Seq)
	if _, seen := r.arrived[e.ID]; !seen {
		if late {
			r.firstLate++
		}
		r.arrived[e.ID] = now
		if len(r.arrived) == r.want {
			close(r.done)
		}
	}
}

// firstAfter is the arrival time of the first counted delivery after t.
func (r *recorder) firstAfter(t time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var first time.Time
	for _, at := range r.times {
		if at.After(t) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first, !first.IsZero()
}

// wait returns when want distinct events have arrived, or the context ends.
func (r *recorder) wait(ctx context.Context) error {
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tally is what the recorder saw.
type tally struct {
	distinct, deliveries, outOfOrder int
	// others are the deliveries of events a backlog recorder does not
	// count.
	others int
	// firstOutOfOrder counts the outOfOrder deliveries that were an
	// event's first: the crash round's figure, where a redelivered batch
	// (an order's 1 after its 4 again) is counted as duplicates instead.
	firstOutOfOrder int
}

func (r *recorder) tally() tally {
	r.mu.Lock()
	defer r.mu.Unlock()
	return tally{distinct: len(r.arrived), deliveries: r.deliveries, outOfOrder: r.order.outOfOrder, others: r.others, firstOutOfOrder: r.firstLate}
}

// arrival is when event id first arrived.
func (r *recorder) arrival(id uuid.UUID) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.arrived[id]
	return t, ok
}
