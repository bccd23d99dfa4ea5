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
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.expect != nil && !r.expect[e.ID] {
		r.others++
		return nil
	}
	r.deliveries++
	r.order.observe(e.OrderID, e.Seq)
	if _, seen := r.arrived[e.ID]; !seen {
		r.arrived[e.ID] = now
		if len(r.arrived) == r.want {
			close(r.done)
		}
	}
	return nil
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
}

func (r *recorder) tally() tally {
	r.mu.Lock()
	defer r.mu.Unlock()
	return tally{distinct: len(r.arrived), deliveries: r.deliveries, outOfOrder: r.order.outOfOrder, others: r.others}
}

// arrival is when event id first arrived.
func (r *recorder) arrival(id uuid.UUID) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.arrived[id]
	return t, ok
}
