package outbox

import (
	"sync"
	"time"

	"github.com/google/uuid"
)

// laneKey names an aggregate: one lane.
type laneKey struct{ typ, id string }

// lanes schedule the stream's publishes: one FIFO per aggregate whose head
// alone may be in flight, and a FIFO of ready heads that the workers take in
// arrival (commit) order. held is every event the stream is responsible for
// until its mark is done: in a lane, in flight, or acknowledged and waiting
// for its mark; an event leaves held when its mark is done, when its lane
// breaks or when it is dropped unattempted. recent remembers events the
// stream marked a little longer, because a statement's snapshot may predate
// their mark. Neither decides alone: an event joins a lane only after the
// database confirmed, under the stream's lease (CDCLeaseVerify), that every
// unpublished predecessor is the stream's, and then only if each of them is
// still held or recent here. An event an operator replayed is unpublished
// and unleased, so the database refuses it whatever recent says.
type lanes struct {
	mu     sync.Mutex
	cond   *sync.Cond
	queues map[laneKey][]*cdcEvent
	ready  []*cdcEvent
	// held maps each held event to its lease's local deadline.
	held   map[uuid.UUID]time.Time
	recent map[uuid.UUID]recentMark
	closed bool
}

// recentFor is how long a marked event still counts as the stream's.
const recentFor = 30 * time.Second

// recentMark is a marked event as recent remembers it: when it was marked,
// and the local deadline its lease had.
type recentMark struct {
	at       time.Time
	deadline time.Time
}

func newLanes() *lanes {
	l := &lanes{
		queues: map[laneKey][]*cdcEvent{},
		held:   map[uuid.UUID]time.Time{},
		recent: map[uuid.UUID]recentMark{},
	}
	l.cond = sync.NewCond(&l.mu)
	return l
}

func key(e *cdcEvent) laneKey { return laneKey{e.AggregateType, e.AggregateID} }

// holdsAllLocked reports whether every blocker is held, recently marked or
// in also (the earlier candidates of the batch being sorted).
//
// A lane shares its deadline: addLocked gives an event no later local
// deadline than any held predecessor's (CDCLeaseVerify caps claim_until the
// same way), so that when another relay may take an earlier event over (its
// lease expired: its mark was slow or failed), every later one's publish has
// ended too, and an order never has two publishes in flight.
func (l *lanes) holdsAllLocked(blockers []uuid.UUID, also map[uuid.UUID]bool) bool {
	for _, b := range blockers {
		if _, ok := l.held[b]; ok {
			continue
		}
		if _, ok := l.recent[b]; ok {
			continue
		}
		if also[b] {
			continue
		}
		return false
	}
	return true
}

func (l *lanes) addLocked(e *cdcEvent, blockers []uuid.UUID) {
	// Every blocker the verification saw capped e's claim_until, also one
	// marked since (now in recent): e's local deadline must not outlive it.
	for _, b := range blockers {
		d, ok := l.held[b]
		if !ok {
			var m recentMark
			m, ok = l.recent[b]
			d = m.deadline
		}
		if ok && d.Before(e.lease.deadline) {
			e.lease.deadline = d
		}
	}
	l.held[e.ID] = e.lease.deadline
	k := key(e)
	q := l.queues[k]
	l.queues[k] = append(q, e)
	if len(q) == 0 {
		l.ready = append(l.ready, e)
		l.cond.Signal()
	}
}

func (l *lanes) pruneRecent(now time.Time) {
	for id, m := range l.recent {
		if now.Sub(m.at) > recentFor {
			delete(l.recent, id)
		}
	}
}

// next waits for a ready head; false once the lanes are closed and empty.
func (l *lanes) next() (*cdcEvent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.ready) == 0 && !l.closed {
		l.cond.Wait()
	}
	if len(l.ready) == 0 {
		return nil, false
	}
	e := l.ready[0]
	l.ready = l.ready[1:]
	return e, true
}

// popLocked removes e, its lane's head, and readies the next one.
func (l *lanes) popLocked(e *cdcEvent) {
	k := key(e)
	q := l.queues[k][1:]
	if len(q) == 0 {
		delete(l.queues, k)
		return
	}
	l.queues[k] = q
	l.ready = append(l.ready, q[0])
	l.cond.Signal()
}

// acked: e's successor may go now; e stays held until marked.
func (l *lanes) acked(e *cdcEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.popLocked(e)
}

// drop forgets e unattempted (shutdown): the next session streams it again.
func (l *lanes) drop(e *cdcEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.held, e.ID)
	l.popLocked(e)
}

// broken removes e's lane after e failed and returns e's queued successors,
// which the caller hands to the sweeper.
func (l *lanes) broken(e *cdcEvent) []*cdcEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := key(e)
	rest := l.queues[k][1:]
	delete(l.queues, k)
	delete(l.held, e.ID)
	for _, r := range rest {
		delete(l.held, r.ID)
	}
	return rest
}

// marked removes ids from held once their mark is done, and remembers in
// recent those the mark changed: an event whose mark failed, or that the
// mark's fence left alone (an operator replayed it, another relay took it
// over), is no longer the stream's.
func (l *lanes) marked(ids, changed []uuid.UUID, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	deadlines := make(map[uuid.UUID]time.Time, len(ids))
	for _, id := range ids {
		deadlines[id] = l.held[id]
		delete(l.held, id)
	}
	for _, id := range changed {
		l.recent[id] = recentMark{at: now, deadline: deadlines[id]}
	}
}

// close wakes every worker; the ready heads left are returned unattempted by
// the workers (they see the session's end).
func (l *lanes) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.cond.Broadcast()
}
