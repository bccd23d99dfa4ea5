// Package eventsignal is the workflow side of a temporalpub signal route
// (temporalpub.Route.Signal): a [Receiver] that takes the events the relay
// delivers to a workflow as signals and hands each one to the workflow once.
//
// The relay delivers at least once, and Temporal does not deduplicate
// signals by any business key (the SDK sends each signal with a random
// request ID), so a relay that lost its mark after Temporal accepted a
// signal sends it again, and the workflow receives it twice. The Receiver
// remembers the keys of the events it handed out (the event ID, see
// [Keyed]) in a bounded set and drops a second delivery. The set travels
// across continue-as-new through [Receiver.State], which the workflow puts
// into its next run's input and passes back to [New].
//
// Create the Receiver first thing in the workflow function, before any
// other code reads the signal channel: signals that arrived before the
// workflow's first task (a Signal-With-Start carries its signal into the
// first task) are already buffered in the channel, and the Receiver sees
// them like any later one.
//
//	func Saga(ctx workflow.Context, in SagaInput) error {
//		events := eventsignal.New[temporalpub.EventInput](ctx, "order-event", in.Events, eventsignal.Options{})
//		for {
//			ev := events.Receive(ctx) // each event ID once
//			...
//			if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
//				events.Drain(handle) // buffered signals would be lost with the run
//				return workflow.NewContinueAsNewError(ctx, Saga, SagaInput{Events: events.State()})
//			}
//			if done {
//				events.Drain(handle) // and with a run that completes
//				return nil
//			}
//		}
//	}
//
// The package imports only the Temporal SDK's workflow package: it is
// deterministic (no map is ever iterated; the set keeps its own order), so
// workflow code may use it anywhere workflowcheck allows workflow calls.
package eventsignal

import (
	"go.temporal.io/sdk/workflow"
)

// DefaultLimit is Options.Limit's default: how many event keys a Receiver
// remembers. A re-delivery by the relay comes before the aggregate's next
// event is delivered (one event of an aggregate at a time), so a duplicate
// is rarely more than a few events behind; a thousand UUIDs weigh about
// 40 KB in a continue-as-new input.
const DefaultLimit = 1000

// Keyed is what a Receiver needs of a signal's payload: the key that makes
// two deliveries the same event. temporalpub.EventInput's key is its
// EventID.
type Keyed interface {
	DedupKey() string
}

// Options configures a [Receiver].
type Options struct {
	// Limit is how many keys the Receiver remembers; beyond it the oldest
	// are forgotten, and a re-delivery of a forgotten event would be handed
	// out again. Optional: defaulted to [DefaultLimit]. A State carried
	// over from a run with a larger limit keeps only its newest Limit keys.
	Limit int
}

// State is what a Receiver remembers, to be carried into the next run's
// input across continue-as-new (JSON-encodable with the workflow's input).
// The zero State is that of a workflow that has received nothing.
type State struct {
	// Seen holds the keys handed out, oldest first.
	Seen []string `json:"seen,omitempty"`
	// Duplicates counts the deliveries dropped, across runs.
	Duplicates int `json:"duplicates,omitempty"`
}

// Receiver hands out each event delivered on one signal channel once.
// It belongs to one workflow run; it is not for use from several
// coroutines at once (workflow.Go) without the workflow's own ordering.
type Receiver[T Keyed] struct {
	ch    workflow.ReceiveChannel
	limit int
	seen  map[string]struct{} // lookups only, never iterated
	order []string            // the keys in seen, oldest first
	dups  int
}

// New returns a Receiver of the signal channel named signal (the route's
// Route.Signal), remembering the keys of state (a previous run's
// [Receiver.State], or the zero State). Call it before anything else in the
// workflow reads that channel.
func New[T Keyed](ctx workflow.Context, signal string, state State, opts Options) *Receiver[T] {
	if opts.Limit <= 0 {
		opts.Limit = DefaultLimit
	}
	r := &Receiver[T]{
		ch:    workflow.GetSignalChannel(ctx, signal),
		limit: opts.Limit,
		seen:  make(map[string]struct{}, min(len(state.Seen), opts.Limit)),
		dups:  state.Duplicates,
	}
	seen := state.Seen
	if len(seen) > opts.Limit {
		seen = seen[len(seen)-opts.Limit:]
	}
	for _, k := range seen {
		r.remember(k)
	}
	return r
}

// Receive blocks until an event not handed out before arrives, and returns
// it; duplicates are dropped and counted on the way. ok is false when ctx
// is cancelled first (the workflow is being cancelled).
func (r *Receiver[T]) Receive(ctx workflow.Context) (ev T, ok bool) {
	for {
		var v T
		got := false
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(r.ch, func(c workflow.ReceiveChannel, _ bool) { got = c.ReceiveAsync(&v) })
		sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
		sel.Select(ctx)
		if !got {
			return ev, false
		}
		if r.accept(v) {
			return v, true
		}
	}
}

// ReceiveAsync returns the next buffered event not handed out before, if
// there is one, without blocking; buffered duplicates are dropped on the
// way.
func (r *Receiver[T]) ReceiveAsync() (ev T, ok bool) {
	for {
		var v T
		if !r.ch.ReceiveAsync(&v) {
			return ev, false
		}
		if r.accept(v) {
			return v, true
		}
	}
}

// Drain hands every buffered new event to handle, in arrival order, and
// returns how many it handed. Call it right before continue-as-new and
// right before the workflow returns: signals still buffered when a run
// ends are neither carried to a next run nor refused. Temporal accepted
// them, so the relay marked their events published, and no closed-workflow
// route or quarantine will ever see them (model/signal.pml's "no signal
// left behind").
func (r *Receiver[T]) Drain(handle func(T)) int {
	n := 0
	for {
		ev, ok := r.ReceiveAsync()
		if !ok {
			return n
		}
		handle(ev)
		n++
	}
}

// AddToSelector adds the channel to sel: when a signal is ready, handle is
// called with it if it is a new event, and not at all for a duplicate.
func (r *Receiver[T]) AddToSelector(sel workflow.Selector, handle func(T)) workflow.Selector {
	return sel.AddReceive(r.ch, func(c workflow.ReceiveChannel, _ bool) {
		var v T
		if c.ReceiveAsync(&v) && r.accept(v) {
			handle(v)
		}
	})
}

// Seen reports whether an event of this key was handed out (or marked).
func (r *Receiver[T]) Seen(key string) bool {
	_, ok := r.seen[key]
	return ok
}

// Mark records key as handed out without receiving it: an event the
// workflow learnt of otherwise (its own start input, say), whose signal
// must then be dropped.
func (r *Receiver[T]) Mark(key string) {
	if _, ok := r.seen[key]; !ok {
		r.remember(key)
	}
}

// Duplicates is how many deliveries were dropped, this run and the runs
// whose State this one was given.
func (r *Receiver[T]) Duplicates() int { return r.dups }

// State is what to carry into the next run (see [State]): the keys the
// Receiver remembers, oldest first, and the duplicate count.
func (r *Receiver[T]) State() State {
	return State{Seen: append([]string(nil), r.order...), Duplicates: r.dups}
}

// accept reports whether v is new, remembering it if so.
func (r *Receiver[T]) accept(v T) bool {
	k := v.DedupKey()
	if _, dup := r.seen[k]; dup {
		r.dups++
		return false
	}
	r.remember(k)
	return true
}

func (r *Receiver[T]) remember(k string) {
	r.seen[k] = struct{}{}
	r.order = append(r.order, k)
	if len(r.order) > r.limit {
		delete(r.seen, r.order[0])
		r.order = r.order[1:]
	}
}
