package outbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
)

// Whose fault a failed publish is decides what it costs the event.
//
//   - The event's own ([ErrPermanent], or any error the publisher does not
//     classify): the event's attempt counts toward MaxAttempts (backoff,
//     then quarantine; at once when permanent). No route for its type, a
//     payload its workflow rejects, Temporal's InvalidArgument for this
//     start.
//   - The sink's ([ErrSinkUnavailable]): the downstream could not be asked
//     or did not answer — unreachable, Unavailable, DeadlineExceeded,
//     Internal, an unknown namespace or a refused credential, a publish cut
//     by the relay's own deadline or shutdown. The attempt is given back,
//     and enough of them in a row open the relay's breaker ([breaker]): an
//     outage is never the event's fault, however long it lasts.
//   - A throttle ([ErrThrottled]): the sink refused for load
//     (ResourceExhausted, a namespace's rate quota). A sink fault that also
//     slows the relay down ([throttle]).
//
// The rule: a sink that is down is never an event's fault; an event the
// sink can never take is. A refusal for good (an event larger than the sink
// takes, see temporalpub's and natspub's) is permanent. A publish that runs
// out of time is the sink's fault unless the sink is proven up for every
// event but this one: when the same event's publish ran out of time twice
// in a row on this relay, each time while the sink acknowledged other
// publishes of the relay (either source, the hold worker's too) in both
// halves of it, none of its requests throttled, the second and every later
// such timeout is the event's own ([errOverdue]): an attempt counted,
// backoff, quarantine after MaxAttempts; on the log source its order goes
// to a hold and the cursor passes it, instead of a retry for ever that
// pins the partition. Both halves, and twice: an outage that begins or
// ends during a publish leaves the other half without acknowledgements, or
// its next publish. A partial outage that times out only some starts (a
// Temporal history shard) still costs those events attempts while the rest
// flows, and quarantines them if it outlasts their whole backoff schedule
// (half an hour to an hour with the defaults); an operator retries them.
// The breaker's probe is no proof: it asks the namespace
// (DescribeNamespace), not the path a start takes. A relay that publishes
// one event at a time (MaxInFlight 1, poll or cdc) sees no other
// acknowledgement during a publish, so there a hung publish stays the
// sink's fault.
var (
	// ErrSinkUnavailable marks a publish error that is the sink's fault,
	// not the event's: the relay gives the attempt back and retries the
	// event once the sink answers. Test for it with errors.Is.
	ErrSinkUnavailable = errors.New("outbox: the sink is unavailable")
	// ErrThrottled marks a publish the sink refused for load: a sink fault
	// that also makes the relay publish more slowly. errors.Is(err,
	// ErrSinkUnavailable) holds for it too.
	ErrThrottled = errors.New("outbox: the sink throttled the publish")
)

// SinkUnavailable wraps err so that errors.Is(err, ErrSinkUnavailable)
// holds, keeping err's message and chain. A Publisher returns it when its
// downstream cannot take any event now.
func SinkUnavailable(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrSinkUnavailable, err)
}

// Throttled wraps err so that errors.Is(err, ErrThrottled) and
// errors.Is(err, ErrSinkUnavailable) hold. A Publisher returns it when its
// downstream refused for load.
func Throttled(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w: %w", ErrThrottled, ErrSinkUnavailable, err)
}

// fault is whose fault a publish error is.
type fault int

const (
	faultEvent fault = iota
	faultSink
	faultThrottle
	// faultCount is how many faults there are (the label values of
	// outbox_publish_errors_total).
	faultCount
)

func (f fault) String() string {
	switch f {
	case faultSink:
		return "sink"
	case faultThrottle:
		return "throttle"
	}
	return "event"
}

// classify says whose fault err is. A publisher's own classification wins
// (ErrPermanent, ErrThrottled, ErrSinkUnavailable), after the relay's own
// verdict on a publish that ran out of time (errOverdue); an error it left
// unclassified is the sink's when it is a context's end (the relay's
// publish deadline, or its shutdown), a network error or PostgreSQL failing
// under the publish ([databaseOutage]), else the event's.
func classify(err error) fault {
	var netErr net.Error
	switch {
	case errors.Is(err, ErrPermanent), errors.Is(err, errOverdue):
		return faultEvent
	case errors.Is(err, ErrThrottled):
		return faultThrottle
	case errors.Is(err, ErrSinkUnavailable),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, context.Canceled),
		errors.As(err, &netErr),
		databaseOutage(err):
		return faultSink
	}
	return faultEvent
}

// Fault says whose fault the publish error err is, as the relay books it:
// "event" (the attempt counts; a permanent error, [ErrPermanent],
// quarantines the event at once), "sink" (the attempt is given back) or
// "throttle" (given back, and the relay publishes more slowly): the fault
// label of outbox_publish_errors_total. It is "" for nil. A Publisher's
// tests ask it whether each error lands where it should (package
// outbox/conformance/sinktest does, for every sink).
func Fault(err error) string {
	if err == nil {
		return ""
	}
	return classify(err).String()
}

// errOverdue marks a publish that ran out of time while the sink answered
// others, twice in a row: the event's fault (see the rule above), an
// attempt counted.
var errOverdue = errors.New("outbox: the publish ran out of time again while the sink acknowledged other publishes; the event's own fault, an attempt counted")

// maxOverdue bounds the events the breaker remembers as overdue; beyond it
// a timeout stays the sink's fault.
const maxOverdue = 10000

// watch is one publish as judge sees the sink meanwhile: the count of the
// relay's acknowledgements when it began and at its midpoint.
type watch struct {
	b     *breaker
	begun int64
	mid   atomic.Int64 // -1 until the midpoint
	timer *time.Timer
}

// watch begins watching a publish that must end by deadline; judge ends it.
func (b *breaker) watch(deadline time.Time) *watch {
	w := &watch{b: b, begun: b.acks.Load()}
	w.mid.Store(-1)
	w.timer = time.AfterFunc(time.Until(deadline)/2, func() { w.mid.Store(b.acks.Load()) })
	return w
}

// judge returns the error of event id's publish as the relay books it, and
// counts an acknowledgement (err nil) as the evidence that the sink
// answers. A failure that reads as the sink's (classify) but ran out of
// time (expired: the call's deadline passed, or err says a deadline did),
// unthrottled (call reported no throttle), while the sink acknowledged
// other publishes in both halves of it, makes id overdue; the event's next
// such failure in a row is its own: err wrapped in errOverdue. Any other
// outcome of id's publish forgets it.
func (w *watch) judge(err error, id uuid.UUID, expired bool, call *publishCall) error {
	w.timer.Stop()
	b := w.b
	if err == nil {
		b.acks.Add(1)
		b.forget(id)
		return nil
	}
	mid := w.mid.Load()
	throughout := mid > w.begun && b.acks.Load() > mid
	timedOut := expired || errors.Is(err, context.DeadlineExceeded)
	if !timedOut || !throughout || call.throttles.Load() > 0 || classify(err) != faultSink {
		b.forget(id)
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.overdue[id] {
		return fmt.Errorf("%w: %w", errOverdue, err)
	}
	if len(b.overdue) < maxOverdue {
		b.overdue[id] = true
	}
	return err
}

// forget drops id from the overdue events.
func (b *breaker) forget(id uuid.UUID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.overdue, id)
}

// databaseOutage reports whether err says PostgreSQL could not serve a
// publish, which is never the event's fault: a publisher that reads the
// database while it publishes (the payload codec fetches the customer's key
// from customer_keys) fails when the server restarts, a backend is
// terminated or connections run out, and an event must not be quarantined
// for that. So the attempt is given back like a sink's outage: a connection
// that could not be made or was lost before the statement was sent
// (pgconn.SafeToRetry), a timeout, and the SQLSTATE classes 08 (connection
// exception), 53 (insufficient resources: too many connections, disk full),
// 57 (operator intervention: shutdown, "the database system is starting
// up", a terminated backend, a cancelled statement) and 58 (system error:
// I/O). Any other server error (a constraint, a missing table) stays the
// event's.
func databaseOutage(err error) bool {
	var (
		pgErr   *pgconn.PgError
		connErr *pgconn.ConnectError
	)
	switch {
	case errors.As(err, &pgErr):
		switch pgErr.Code[:min(2, len(pgErr.Code))] {
		case "08", "53", "57", "58":
			return true
		}
		return false
	case errors.As(err, &connErr):
		return true
	}
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}

// Prober is implemented by a Publisher that can tell whether its downstream
// answers without publishing anything (temporalpub describes its
// namespace). While the relay's breaker is open it probes with backoff, and
// claims again once a probe succeeds. A Publisher without it is probed by
// publishing: the relay claims again after each backoff, and the breaker
// opens again after BreakerThreshold more sink faults, which cost no
// attempts.
type Prober interface {
	Probe(ctx context.Context) error
}
