// Package sinktest is the conformance suite every sink of the outbox relay
// passes: a [outbox.Publisher] proves itself by running [Run] against a
// real server of its downstream, the way Watermill's backends run
// pubsub/tests. outflow's sinks run it (temporalpub's start and signal
// routes, natspub's JetStream stream), and so can a service's own:
//
//	func TestSinkConformance(t *testing.T) {
//		sinktest.Run(t, sinktest.Sink{
//			Publisher:  func(t *testing.T) outbox.Publisher { ... },
//			Effects:    func(ctx context.Context, e outbox.Event) (int, error) { ... },
//			Refused:    func(t *testing.T) outbox.Event { ... },
//			MaxPayload: 64 << 10,
//			Outage:     func(t *testing.T) (back func()) { ... },
//		})
//	}
//
// The cases are the publisher's contract (see [outbox.Publisher]) as the
// relay relies on it, each a subtest whose name says the rule:
//
//   - ack: an event published is acknowledged with nil and has exactly one
//     effect downstream.
//   - duplicate is ack: the same event published again, and by several
//     calls at once, is acknowledged every time and still has one effect.
//     The relay publishes at least once; the sink keeps it once.
//   - the event's fault: an event the sink can never take (no route for
//     its type, an aggregate it has no place for) fails permanently
//     ([outbox.ErrPermanent], the relay quarantines it at once) and leaves
//     no effect.
//   - too large: a payload just over the sink's limit, and one far over
//     it, fail permanently: the event's fault, never the sink's nor a
//     throttle, however the sink words its refusal; no effect. One half
//     the limit is taken.
//   - the sink's fault: while the sink is down a publish fails as the
//     sink's fault (the relay gives the attempt back), never as
//     permanent; once the sink is back the same event publishes and has
//     one effect.
//
// Whose fault an error is, is judged by [outbox.Fault], the relay's own
// classification. There is no throttle case: a throttle reaches the relay
// through [outbox.ReportThrottle] inside a relay's publish (Temporal's SDK
// retries a throttled request within the call), or as [outbox.Throttled]
// from a sink that says so, and no server outflow ships refuses for load
// on demand within one Publish call; the relay's handling of a throttle
// is tested against a throttled Temporal namespace in temporalpub.
package sinktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
)

// Sink is what a sink's test tells the suite about it.
type Sink struct {
	// Publisher returns a publisher of the sink, connected to a running
	// server. Mandatory. The suite asks for one per case; each may be the
	// same.
	Publisher func(t *testing.T) outbox.Publisher
	// Effects counts the effects event e has at the sink now: the
	// workflows started with its ID, the times its target workflow handled
	// it, the messages carrying its ID on the stream. It returns 0 when
	// the event left no trace, and an error only when it cannot tell (the
	// suite asks again until Timeout). Mandatory.
	Effects func(ctx context.Context, e outbox.Event) (int, error)
	// Refused returns an event the sink can never take for what it is: a
	// type it has no route for, an aggregate that names no subject. Its
	// publish must fail permanently. Mandatory.
	Refused func(t *testing.T) outbox.Event
	// MaxPayload is the sink's limit in bytes: an event whose payload is
	// larger is refused for good, and one of half the size is taken (the
	// suite publishes MaxPayload/2, MaxPayload+1 and 3*MaxPayload bytes of
	// JSON). Mandatory.
	MaxPayload int
	// Outage takes the sink down so that the publishers Publisher returned
	// cannot reach it (stop its server), and returns back, which brings it
	// up again on the same state and address and returns once it answers.
	// The suite calls back before the case ends. Mandatory.
	Outage func(t *testing.T) (back func())
	// AggregateType and EventType are the aggregate type and the event type
	// of the events the suite publishes, which the sink must take (a type
	// its routes know). Optional: defaulted to "sinktest" and
	// "SinkTestEvent".
	AggregateType, EventType string
	// Timeout bounds each publish of a sink that is up, and each wait for
	// the effects to show. Optional: defaulted to 20 seconds.
	Timeout time.Duration
	// OutageTimeout is the deadline of a publish while the sink is down:
	// the relay's PublishTimeout, within which the publisher must give up.
	// Optional: defaulted to 2 seconds.
	OutageTimeout time.Duration
	// Settle is how long a count of effects must hold before the suite
	// takes it: a sink's view of its effects may lag (Temporal's
	// visibility). Optional: defaulted to 500 milliseconds.
	Settle time.Duration
}

// validate returns what is missing from s, every field at once.
func (s Sink) validate() error {
	var missing []error
	if s.Publisher == nil {
		missing = append(missing, errors.New("sinktest: Sink.Publisher is nil: return a publisher of the running sink"))
	}
	if s.Effects == nil {
		missing = append(missing, errors.New("sinktest: Sink.Effects is nil: count an event's effects at the sink"))
	}
	if s.Refused == nil {
		missing = append(missing, errors.New("sinktest: Sink.Refused is nil: return an event the sink can never take"))
	}
	if s.MaxPayload <= 0 {
		missing = append(missing, fmt.Errorf("sinktest: Sink.MaxPayload is %d: set the largest payload the sink takes, in bytes", s.MaxPayload))
	}
	if s.Outage == nil {
		missing = append(missing, errors.New("sinktest: Sink.Outage is nil: take the sink down and return what brings it back"))
	}
	if len(missing) > 0 {
		return errors.Join(missing...)
	}
	return nil
}

func (s *Sink) setDefaults() {
	if s.AggregateType == "" {
		s.AggregateType = "sinktest"
	}
	if s.EventType == "" {
		s.EventType = "SinkTestEvent"
	}
	if s.Timeout <= 0 {
		s.Timeout = 20 * time.Second
	}
	if s.OutageTimeout <= 0 {
		s.OutageTimeout = 2 * time.Second
	}
	if s.Settle <= 0 {
		s.Settle = 500 * time.Millisecond
	}
}

// Run runs every case of the suite against s, each a subtest of t.
func Run(t *testing.T, s Sink) {
	t.Helper()
	require.NoError(t, s.validate())
	s.setDefaults()
	t.Run("ack", s.ack)
	t.Run("duplicate is ack", s.duplicate)
	t.Run("the event's fault", s.eventsFault)
	t.Run("too large", s.tooLarge)
	t.Run("the sink's fault", s.sinksFault)
}

// ack: an event published is acknowledged and has one effect.
func (s Sink) ack(t *testing.T) {
	pub := s.Publisher(t)
	e := s.event(t, 0)
	require.NoError(t, s.publish(pub, e), "a publish the sink took is acknowledged with nil")
	s.requireEffects(t, e, 1)
}

// duplicate: a second publish of an event, and concurrent ones, are
// acknowledged, and the event keeps one effect.
func (s Sink) duplicate(t *testing.T) {
	t.Run("again", func(t *testing.T) {
		pub := s.Publisher(t)
		e := s.event(t, 0)
		require.NoError(t, s.publish(pub, e))
		s.requireEffects(t, e, 1)
		require.NoError(t, s.publish(pub, e), "a second publish of an event the sink has is acknowledged with nil")
		s.requireEffects(t, e, 1)
	})
	t.Run("concurrently", func(t *testing.T) {
		const calls = 4
		pub := s.Publisher(t)
		e := s.event(t, 0)
		errs := make([]error, calls)
		var wg sync.WaitGroup
		for i := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.publish(pub, e)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "publish %d of %d concurrent publishes of one event", i+1, calls)
		}
		s.requireEffects(t, e, 1)
	})
}

// eventsFault: an event the sink can never take fails permanently, with no
// effect.
func (s Sink) eventsFault(t *testing.T) {
	pub := s.Publisher(t)
	e := s.Refused(t)
	if e.ID == uuid.Nil {
		e.ID = uuid.New()
	}
	err := s.publish(pub, e)
	requirePermanent(t, err, "an event the sink can never take")
	s.requireEffects(t, e, 0)
}

// tooLarge: a payload over the sink's limit fails permanently, the event's
// fault and neither the sink's nor a throttle; half the limit is taken.
func (s Sink) tooLarge(t *testing.T) {
	for _, c := range []struct {
		name string
		size int
	}{
		{"just over the limit", s.MaxPayload + 1},
		{"far over the limit", 3 * s.MaxPayload},
	} {
		t.Run(c.name, func(t *testing.T) {
			pub := s.Publisher(t)
			e := s.event(t, c.size)
			err := s.publish(pub, e)
			requirePermanent(t, err, fmt.Sprintf("a payload of %d bytes, over the sink's limit of %d", c.size, s.MaxPayload))
			s.requireEffects(t, e, 0)
		})
	}
	t.Run("half the limit", func(t *testing.T) {
		pub := s.Publisher(t)
		e := s.event(t, s.MaxPayload/2)
		require.NoError(t, s.publish(pub, e), "a payload of %d bytes, half the sink's limit, is taken", s.MaxPayload/2)
		s.requireEffects(t, e, 1)
	})
}

// sinksFault: while the sink is down a publish is the sink's fault, never
// permanent; once it is back the same event publishes, with one effect.
func (s Sink) sinksFault(t *testing.T) {
	pub := s.Publisher(t)
	e := s.event(t, 0)
	back := s.Outage(t)
	restored := false
	defer func() {
		if !restored {
			back()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), s.OutageTimeout)
	err := pub.Publish(ctx, e)
	cancel()
	require.Error(t, err, "a publish to a sink that is down cannot be acknowledged")
	require.NotErrorIs(t, err, outbox.ErrPermanent, "an outage is never the event's fault: %v", err)
	require.Equal(t, "sink", outbox.Fault(err), "an outage is the sink's fault (outbox.Fault), so the relay gives the attempt back: %v", err)
	t.Logf("while the sink is down: %v", err)

	back()
	restored = true
	var last error
	waitFor(t, s.Timeout, func() bool {
		last = s.publish(pub, e)
		return last == nil
	}, func() string { return fmt.Sprintf("once the sink is back, the event publishes; last error: %v", last) })
	s.requireEffects(t, e, 1)
}

// requirePermanent fails t unless err is a permanent failure the relay
// books as the event's fault.
func requirePermanent(t *testing.T, err error, what string) {
	t.Helper()
	require.Error(t, err, "%s is refused", what)
	require.ErrorIs(t, err, outbox.ErrPermanent, "%s is refused for good (outbox.Permanent), so the relay quarantines it at once", what)
	require.Equal(t, "event", outbox.Fault(err), "%s is the event's fault, not the sink's nor a throttle: %v", what, err)
	require.NotErrorIs(t, err, outbox.ErrSinkUnavailable, "%s: no outage", what)
	require.NotErrorIs(t, err, outbox.ErrThrottled, "%s: no throttle", what)
}

// publish publishes e through pub within s.Timeout.
func (s Sink) publish(pub outbox.Publisher, e outbox.Event) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	return pub.Publish(ctx, e)
}

// requireEffects waits until e has want effects at the sink, and for them
// to hold for s.Settle.
func (s Sink) requireEffects(t *testing.T, e outbox.Event, want int) {
	t.Helper()
	var (
		got   int
		err   error
		since time.Time
	)
	waitFor(t, s.Timeout+s.Settle, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
		defer cancel()
		got, err = s.Effects(ctx, e)
		switch {
		case err != nil || got != want:
			since = time.Time{}
			return false
		case since.IsZero():
			since = time.Now()
		}
		return time.Since(since) >= s.Settle
	}, func() string {
		return fmt.Sprintf("event %s: want %d effects at the sink, held for %s; last count %d (error: %v)", e.ID, want, s.Settle, got, err)
	})
}

// waitFor polls cond until it holds, failing t with msg's message once
// timeout passed.
func waitFor(t *testing.T, timeout time.Duration, cond func() bool, msg func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			require.FailNow(t, msg())
		}
		<-tick.C
	}
}

// event is an event the sink takes, of a fresh aggregate, whose payload is
// a JSON object of size bytes (at least 27) that compresses little: a
// sink may compress a request before its limit applies.
func (s Sink) event(t *testing.T, size int) outbox.Event {
	t.Helper()
	const open, end = `{"data":"`, `"}`
	n := max(size-len(open)-len(end), 16)
	raw := make([]byte, (n+1)/2)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	payload := []byte(open + hex.EncodeToString(raw)[:n] + end)
	return outbox.Event{
		ID:            uuid.Must(uuid.NewV7()),
		AggregateType: s.AggregateType,
		AggregateID:   uuid.NewString(),
		Sequence:      1,
		Type:          s.EventType,
		SchemaVersion: 1,
		Payload:       payload,
		OccurredAt:    time.Now(),
	}
}
