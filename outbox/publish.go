package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/outflow/outflow/outbox/failpoints"
)

// Publisher hands one event to the downstream system (Temporal, in outflow).
// It is the relay's only port to the outside.
//
// The contract:
//   - Publish returns nil only after the downstream has durably accepted the
//     event: the relay marks the event published on nil and never offers it
//     again.
//   - An answer meaning "this event was already accepted" (Temporal's
//     "workflow already started" for the event's ID) is an acknowledgement:
//     return nil. The relay publishes at least once, so a duplicate after a
//     crash between acknowledgement and mark is normal.
//   - An event that can never succeed (no route for its type, a payload that
//     fails validation) returns an error wrapping [ErrPermanent] (see
//     [Permanent]): the relay quarantines it at once. Any other error is
//     retried with backoff until RelayConfig.MaxAttempts.
//   - Publish must honour ctx: the relay gives each call a deadline that ends
//     before the event's lease, so a slow call cannot outlive its claim.
//   - Publish is called concurrently (up to RelayConfig.MaxInFlight
//     calls), never with two events of one aggregate at once.
type Publisher interface {
	Publish(ctx context.Context, e Event) error
}

// SkipPublisher is a [Publisher] whose downstream must learn of an
// operator's skip: a consumer that applies an aggregate's events strictly in
// sequence and cannot read the outbox (another service, with its own
// database) would otherwise wait for the skipped event for ever. The relay
// calls PublishSkip with the skipped event (Event.Skipped set) in the
// event's place in its aggregate's lane: after its predecessors, before its
// successors, which wait for it. A publisher that does not implement it
// (Temporal's: a skipped event starts no workflow) gets nothing, and the
// skip's place in the lane passes at once.
//
// The contract is Publish's, with one difference: PublishSkip is retried
// after its backoff however it fails, never quarantined, and the
// aggregate's later events wait meanwhile; a tombstone the downstream can
// never take (an aggregate it has no place for) is acknowledged with nil.
type SkipPublisher interface {
	Publisher
	PublishSkip(ctx context.Context, e Event) error
}

// PublisherFunc adapts a function to [Publisher].
type PublisherFunc func(ctx context.Context, e Event) error

// Publish calls f.
func (f PublisherFunc) Publish(ctx context.Context, e Event) error { return f(ctx, e) }

// ErrPermanent marks a publish error that no retry can fix; the relay
// quarantines the event at once. Test for it with errors.Is.
var ErrPermanent = errors.New("outbox: permanent publish error")

// Permanent wraps err so that errors.Is(err, ErrPermanent) holds, keeping
// err's message and chain.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrPermanent, err)
}

// publishOne publishes one claimed event and runs the relay.after_publish
// failpoint after the acknowledgement.
func (r *pollRelay) publishOne(ctx context.Context, c claimed) error {
	return publishAcked(ctx, &r.cfg, c.attempt, r.pub, c.Event, r.cfg.Failpoints, failpoints.RelayAfterPublish)
}

// publishAcked publishes e through pub and runs the failpoint afterPublish
// once the downstream has acknowledged it: published_at is not yet written,
// so a crash there is the ACK gap and the event will be published again. A
// panicking publisher is a failed publish, not a dead relay. Every source
// publishes through it. A skipped event's tombstone goes to PublishSkip, and
// is acknowledged at once by a publisher that takes none. The publish is a
// span of the event's trace, attempt its attempt counting this one
// (startPublishSpan), traced through cfg's tracer provider.
func publishAcked(ctx context.Context, cfg *RelayConfig, attempt int, pub Publisher, e Event, fps *failpoints.Set, afterPublish string) (err error) {
	ctx, span := startPublishSpan(ctx, cfg, e, attempt)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("outbox: publisher panicked: %v", p)
		}
		endPublishSpan(span, err)
	}()
	if e.Skipped {
		err = publishSkip(ctx, pub, e)
	} else {
		err = pub.Publish(ctx, e)
	}
	if err != nil {
		return err
	}
	if err := fps.Inject(ctx, afterPublish); err != nil {
		return fmt.Errorf("outbox: acknowledgement dropped: %w", err)
	}
	return nil
}

// publishSkip hands the tombstone of the skipped event e to pub when pub
// takes tombstones ([SkipPublisher]), and acknowledges it otherwise.
func publishSkip(ctx context.Context, pub Publisher, e Event) error {
	if sp, ok := pub.(SkipPublisher); ok {
		return sp.PublishSkip(ctx, e)
	}
	return nil
}

// notedPublisher is pub with note called before each delivery, tombstones
// included; it takes tombstones when pub does.
type notedPublisher struct {
	pub  Publisher
	note func(Event)
}

var _ SkipPublisher = notedPublisher{}

func (p notedPublisher) Publish(ctx context.Context, e Event) error {
	p.note(e)
	return p.pub.Publish(ctx, e)
}

func (p notedPublisher) PublishSkip(ctx context.Context, e Event) error {
	p.note(e)
	return publishSkip(ctx, p.pub, e)
}
