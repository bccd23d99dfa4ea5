package outboxtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
)

// Recorder is an [outbox.Publisher] that records every event it
// acknowledges, in the order of the acknowledgements, for a test to look at
// what a relay published. The zero value acknowledges every event. It is
// safe for the relay's concurrent publishes.
type Recorder struct {
	// Answer, when set, decides each publish before it is recorded: nil
	// acknowledges (and records), an error is the publish's failure (wrap it
	// with [outbox.Permanent] to have the event quarantined at once). It may
	// call a real publisher, to record what that one accepted. Set it before
	// the relay runs.
	Answer func(ctx context.Context, e outbox.Event) error
	// DB, when set, is the outbox the recorder's relay reads: a [Recorder.Wait]
	// that times out says who holds its events ([Holders]). [RunRelay]
	// sets it to the relay's pool when it is nil.
	DB DB

	mu       sync.Mutex
	events   []outbox.Event
	attempts int
	changed  chan struct{} // closed and replaced on every acknowledgement
}

// Publish implements [outbox.Publisher].
func (r *Recorder) Publish(ctx context.Context, e outbox.Event) error {
	r.mu.Lock()
	r.attempts++
	r.mu.Unlock()
	if r.Answer != nil {
		if err := r.Answer(ctx, e); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
	return nil
}

// Events returns the acknowledged events so far, in order; an event the
// relay delivered twice (after a lost mark, or a replay) is there twice.
func (r *Recorder) Events() []outbox.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Attempts is the number of Publish calls so far, failed ones included.
func (r *Recorder) Attempts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts
}

// Wait waits until at least n events were acknowledged and returns them all,
// in order; it fails t if they are not within the given time. It wakes on
// each acknowledgement, it does not poll.
func (r *Recorder) Wait(t testing.TB, n int, within time.Duration) []outbox.Event {
	t.Helper()
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	for {
		r.mu.Lock()
		if len(r.events) >= n {
			out := slices.Clone(r.events)
			r.mu.Unlock()
			return out
		}
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		changed, got := r.changed, len(r.events)
		r.mu.Unlock()
		select {
		case <-changed:
		case <-timeout.C:
			msg := fmt.Sprintf("outboxtest: %d events published to this recorder within %s, want %d", got, within, n)
			if r.DB != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				held, err := Holders(ctx, r.DB)
				cancel()
				if err != nil {
					held = "(could not read them: " + err.Error() + ")"
				}
				msg += "; the outbox's events: " + held
			}
			require.FailNow(t, msg)
		}
	}
}
