package outbox

import "time"

// lease is this relay's local view of a claim's lease. Its deadline is taken
// on the monotonic clock from before the claim was sent, so it never outlives
// claim_until in the database. The relay starts a publish only when the whole
// PublishTimeout fits before the deadline (less a safety margin), so a live
// relay is never still publishing an event another relay may have taken over.
type lease struct {
	deadline time.Time
}

func newLease(start time.Time, d time.Duration) lease {
	return lease{deadline: start.Add(d)}
}

// publishDeadline returns the deadline for a publish starting at now, or
// false when the lease is too close to its end to start one: margin (a tenth
// of the lease) covers clock drift and the time the mark takes.
func (l lease) publishDeadline(now time.Time, timeout, margin time.Duration) (time.Time, bool) {
	end := now.Add(timeout)
	if end.After(l.deadline.Add(-margin)) {
		return time.Time{}, false
	}
	return end, true
}
