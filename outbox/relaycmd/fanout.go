package relaycmd

import (
	"context"
	"errors"

	"github.com/outflow/outflow/outbox"
)

// Fanout publishes each event to every sink in turn and acknowledges it
// once all of them have: the outbox keeps one state per event, so an event
// is published when every sink has it. A sink that failed makes the relay
// publish the event again to all of them; a sink that had already accepted
// it absorbs the second delivery as a duplicate (Temporal by the workflow
// ID, JetStream by Nats-Msg-Id within its window, then the consumers'
// inbox). The first error decides whose fault the attempt is. An
// operator's skip goes, as a tombstone, only to the sinks that take one
// (JetStream's; Temporal starts nothing for it).
type Fanout []outbox.Publisher

var (
	_ outbox.SkipPublisher = Fanout(nil)
	_ outbox.Prober        = Fanout(nil)
)

func (f Fanout) Publish(ctx context.Context, e outbox.Event) error {
	for _, p := range f {
		if err := p.Publish(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

// PublishSkip hands the skipped event's tombstone to every sink that takes
// tombstones.
func (f Fanout) PublishSkip(ctx context.Context, e outbox.Event) error {
	for _, p := range f {
		if sp, ok := p.(outbox.SkipPublisher); ok {
			if err := sp.PublishSkip(ctx, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// Probe probes every sink that can be probed; the relay's breaker closes
// once all answer.
func (f Fanout) Probe(ctx context.Context) error {
	var errs []error
	for _, p := range f {
		if pr, ok := p.(outbox.Prober); ok {
			errs = append(errs, pr.Probe(ctx))
		}
	}
	return errors.Join(errs...)
}
