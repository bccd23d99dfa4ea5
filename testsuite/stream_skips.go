package testsuite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/natspub"
)

// CheckStreamSkips judges, at the JetStream sink's stream, the poison
// aggregates an [Operator] enqueued, skipped and replayed on a stack with
// the jetstream sink (its relays publish to stream on the NATS server at
// url), after the drain:
//
//   - a skipped event is never on the stream but as its tombstone
//     (Outflow-Skipped: true, no body), which the skip publishes in its
//     place, once: a message of it with a body is a skipped event
//     delivered, by a replay over the skip, say;
//   - every unskipped poison aggregate's event (a deliverable event behind
//     a poison one) is on the stream with its body;
//
// and the journal's poison checks (the replays of the skipped aggregates
// planned exactly their unskipped events, which were delivered again; the
// oversized events were quarantined for their size and skipped). It
// returns a summary line and every violation found.
func CheckStreamSkips(ctx context.Context, s *Stack, url, stream string, j Journal) (string, error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf("stream: "+format, args...)) }
	nc, err := nats.Connect(url)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return "", err
	}
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return "", err
	}
	subjects := st.CachedInfo().Config.Subjects
	if len(subjects) != 1 || !strings.HasSuffix(subjects[0], ".>") {
		return "", fmt.Errorf("stream %s has subjects %q; want one PREFIX.>", stream, subjects)
	}
	prefix := strings.TrimSuffix(subjects[0], ".>")
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{prefix + "." + PoisonAggregateType + ".>"}})
	if err != nil {
		return "", err
	}
	// By event id: its messages with a body, and its tombstones.
	bodies, tombstones := map[string]int{}, map[string]int{}
	for {
		batch, err := cons.Fetch(256, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return "", err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			id := m.Headers().Get(jetstream.MsgIDHeader)
			if m.Headers().Get(natspub.HeaderSkipped) == "true" && len(m.Data()) == 0 {
				tombstones[id]++
			} else {
				bodies[id]++
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return "", err
		}
		if n == 0 {
			break
		}
	}

	skipped, err := qSkippedEvents.All(ctx, s.Pool, namedsql.NoArgs{})
	if err != nil {
		return "", err
	}
	skippedIDs := map[string]bool{}
	tombstoned, inTemporal := 0, 0
	for _, e := range skipped {
		skippedIDs[e.EventID] = true
		if bodies[e.EventID] > 0 {
			fail("skipped event %s (%s %s) was delivered: the stream holds %d message(s) of it with a body", e.EventID, e.AggregateType, e.EventType, bodies[e.EventID])
		}
		switch n := tombstones[e.EventID]; {
		case n == 0:
			fail("skipped event %s (%s %s) has no tombstone on the stream: its consumers cannot tell the skip from a gap", e.EventID, e.AggregateType, e.EventType)
		case n > 1:
			fail("skipped event %s (%s %s) has %d tombstones on the stream, want one", e.EventID, e.AggregateType, e.EventType, n)
		default:
			tombstoned++
		}
		// With both sinks Temporal comes first: an event only the stream
		// refuses (its size) has had its Temporal start.
		if _, err := s.Env.Client.DescribeWorkflow(ctx, e.EventID, ""); err == nil {
			inTemporal++
		}
	}
	events, err := qOracleEvents.All(ctx, s.Pool, namedsql.NoArgs{})
	if err != nil {
		return "", err
	}
	later := 0
	for _, e := range events {
		if e.AggregateType != PoisonAggregateType {
			continue
		}
		if bodies[e.EventID] == 0 {
			fail("event %s (%s of poison aggregate %s, seq %d), behind a skipped one, is not on the stream", e.EventID, e.Type, e.AggregateID, e.Sequence)
			continue
		}
		later++
	}
	errs = append(errs, j.poisonViolations()...)
	for _, u := range j.Unexpected {
		errs = append(errs, fmt.Errorf("oracle: the operator got an unexpected answer: %s", u))
	}
	for _, line := range sortedValues(j.QuarantinedOrders) {
		errs = append(errs, fmt.Errorf("oracle: an order's event was quarantined during the soak (only poison events should be): %s", line))
	}
	poisonLeft, err := qUnsettledPoison.Value(ctx, s.Pool, aggregateTypeArgs{AggregateType: PoisonAggregateType})
	if err != nil {
		return "", err
	}
	if poisonLeft != 0 {
		fail("%d events of poison aggregates were neither skipped nor delivered", poisonLeft)
	}
	summary := fmt.Sprintf("stream: %d skipped events, each only as its one tombstone (%d of them started in Temporal before the stream refused them), 0 with a body; %d events behind poison ones on the stream; "+
		"replays of skipped aggregates delivered %d later events again and 0 skipped",
		tombstoned, inTemporal, later, j.LaterRedelivered)
	return summary, errors.Join(errs...)
}
