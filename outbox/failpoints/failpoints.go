// Package failpoints is outflow's fault injection: named points in the code
// where a test can make the process crash, fail or stall, configured by the
// OUTFLOW_FAILPOINTS environment variable:
//
//	OUTFLOW_FAILPOINTS="relay.after_publish=crash,orders.before_commit=sleep:2s"
//
// Actions:
//   - crash: the process sends itself SIGKILL the first time the point is
//     reached: no deferred function, no flush, exactly like a power cut.
//   - error: [Set.Inject] returns an error wrapping [ErrInjected].
//   - sleep:DURATION: [Set.Inject] sleeps (or returns early when ctx ends).
//
// Only a main reads the environment (Parse(os.Getenv(EnvVar))) and passes
// the [Set] down; a library takes a *Set from its caller, and a nil *Set injects nothing.
//
// The names are fixed in docs/reference.md. An unknown name or action is rejected
// when the configuration is parsed, so a typo in a test fails loudly instead
// of testing nothing.
package failpoints

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// EnvVar is the environment variable failpoints are read from.
const EnvVar = "OUTFLOW_FAILPOINTS"

// The failpoint names of docs/reference.md.
const (
	OrdersBeforeCommit           = "orders.before_commit"
	OrdersAfterCommit            = "orders.after_commit"
	RelayAfterClaim              = "relay.after_claim"
	RelayAfterPublish            = "relay.after_publish"
	RelayBeforeMarkCommit        = "relay.before_mark_commit"
	ActivityPaymentAfterProvider = "activity.payment.after_provider"
	ActivityRefundAfterProvider  = "activity.refund.after_provider"
	ActivityEmailAfterProvider   = "activity.email.after_provider"
	ConsumerAfterCommit          = "consumer.after_commit"
	CleanupMidBatch              = "cleanup.mid_batch"
	CDCAfterReceive              = "cdc.after_receive"
	CDCAfterPublish              = "cdc.after_publish"
	CDCBeforeConfirm             = "cdc.before_confirm"
	InventoryAfterCommit         = "inventory.after_commit"
	// LogAfterRead: the log source's read committed (tries counted, the
	// lease renewed), nothing of its batch published.
	LogAfterRead = "log.after_read"
	// LogBeforeAdvance: the log source's batch published, the cursor not
	// yet advanced over it.
	LogBeforeAdvance             = "log.before_advance"
	JetStreamAfterAck            = "jetstream.after_ack"
	JetStreamConsumerAfterCommit = "jetstream.consumer.after_commit"
	// WebhookAfterCommit: a Stripe webhook's inbox row and outbox event
	// are committed, the order API's 200 not yet written.
	WebhookAfterCommit = "webhook.after_commit"
)

// Names lists every failpoint the code knows.
var Names = []string{
	OrdersBeforeCommit, OrdersAfterCommit,
	RelayAfterClaim, RelayAfterPublish, RelayBeforeMarkCommit,
	ActivityPaymentAfterProvider, ActivityRefundAfterProvider, ActivityEmailAfterProvider,
	ConsumerAfterCommit, CleanupMidBatch,
	CDCAfterReceive, CDCAfterPublish, CDCBeforeConfirm,
	LogAfterRead, LogBeforeAdvance,
	InventoryAfterCommit, WebhookAfterCommit,
	JetStreamAfterAck, JetStreamConsumerAfterCommit,
}

// ErrInjected is wrapped by the error an "error" failpoint returns.
var ErrInjected = errors.New("failpoint: injected error")

type kind int

const (
	kindCrash kind = iota + 1
	kindError
	kindSleep
)

type action struct {
	kind  kind
	sleep time.Duration
}

// Set is a parsed failpoint configuration.
type Set struct {
	actions map[string]action
}

// Parse reads a configuration such as "a=crash,b=sleep:1s".
func Parse(spec string) (*Set, error) {
	s := &Set{actions: map[string]action{}}
	known := map[string]bool{}
	for _, n := range Names {
		known[n] = true
	}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, act, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("failpoints: %q: want name=action", part)
		}
		name, act = strings.TrimSpace(name), strings.TrimSpace(act)
		if !known[name] {
			return nil, fmt.Errorf("failpoints: unknown failpoint %q (known: %s)", name, strings.Join(Names, ", "))
		}
		var a action
		switch {
		case act == "crash":
			a.kind = kindCrash
		case act == "error":
			a.kind = kindError
		case strings.HasPrefix(act, "sleep:"):
			d, err := time.ParseDuration(strings.TrimPrefix(act, "sleep:"))
			if err != nil || d < 0 {
				return nil, fmt.Errorf("failpoints: %s: bad sleep duration in %q", name, act)
			}
			a = action{kind: kindSleep, sleep: d}
		default:
			return nil, fmt.Errorf("failpoints: %s: unknown action %q (want crash, error or sleep:DURATION)", name, act)
		}
		s.actions[name] = a
	}
	return s, nil
}

// Inject runs the action configured for name, if any.
func (s *Set) Inject(ctx context.Context, name string) error {
	if s == nil {
		return nil
	}
	a, ok := s.actions[name]
	if !ok {
		return nil
	}
	switch a.kind {
	case kindCrash:
		fmt.Fprintf(os.Stderr, "failpoint %s: crashing (SIGKILL)\n", name)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not deliverable late; never return.
	case kindError:
		return fmt.Errorf("%w at %s", ErrInjected, name)
	case kindSleep:
		t := time.NewTimer(a.sleep)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
