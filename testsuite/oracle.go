package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/proto"

	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/outbox/namedsql"
)

// run is one execution of a workflow ID, as Temporal's visibility lists it.
type run struct {
	status       enumspb.WorkflowExecutionStatus
	start, close time.Time
}

// oracleEvent is one unskipped outbox event with its order's customer.
type oracleEvent struct {
	EventID       string    `db:"event_id"`
	AggregateType string    `db:"aggregate_type"`
	AggregateID   string    `db:"aggregate_id"`
	Sequence      int64     `db:"sequence"`
	Type          string    `db:"type"`
	Occurred      time.Time `db:"occurred"`
	Customer      string    `db:"customer"`
}

// CheckOracle judges a chaos soak in which an [Operator] acted, after the
// drain and [CheckInvariants], from Temporal's record, the database and the
// operator's journal. It returns every violation found, and a summary line:
//
//   - every unskipped event has exactly one workflow run, completed (a replay
//     of a completed workflow stays one run; nothing runs after the drain);
//   - every replay was delivered: no event is left flagged;
//   - an order's event committed after a replay of an earlier event of that
//     order started only after the replay was delivered, and one published
//     around the replay was not in flight while the replay was;
//   - only poison events were skipped, and all of them were; none has a
//     run in Temporal (a skipped event is never delivered, not even by a
//     replay); the replays of the skipped aggregates planned exactly their
//     unskipped events (those behind the poison ones) and delivered them
//     again; the oversized events were quarantined as their own fault
//     (for their size, or, under the soak's kills and load, for their
//     relays' deaths or overdue publishes: on a loaded machine a 6 MiB
//     publish often outlasts the lease, so which one is chance; the sink
//     conformance suite's "too large" case holds the size refusal itself) ([Journal.poisonViolations]);
//   - an erasure the database accepted came after every workflow with a
//     payload under the erased key had closed, and no workflow of an order
//     event committed after it has one; a refusal named the customer's orders (or their
//     workflows) that ran through it;
//   - nothing is pending, quarantined or replaying (outboxctl status), in
//     the log neither: no event after a cursor, no hold;
//   - the operator got no answer it did not expect, and saw no order event
//     quarantined.
//
// Over the log (Source "log") events, skips and poison are the log's, and a
// replay is delivered when its order's hold is released (no hold is left
// after the drain). The log marks no event when it is delivered again, so a
// log replay's successors are not timed against it here: that the hold
// worker publishes an order's events one by one, in order, is the
// invariants' (per-order start order) and the failpoint matrix's.
func CheckOracle(ctx context.Context, s *Stack, j Journal) (string, error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf("oracle: "+format, args...)) }

	events, err := qOracleEvents.All(ctx, s.Pool, namedsql.NoArgs{})
	if err != nil {
		return "", err
	}
	runs, err := waitRuns(ctx, s, events, time.Minute)
	if err != nil {
		return "", err
	}

	// One run per event, completed.
	for _, e := range events {
		rs := runs[e.EventID]
		switch {
		case len(rs) != 1:
			fail("event %s (%s %s/%s seq %d) has %d runs in Temporal, want 1 (a replay of a completed workflow stays one run)",
				e.EventID, e.Type, e.AggregateType, e.AggregateID, e.Sequence, len(rs))
		case rs[0].status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			fail("event %s (%s %s/%s seq %d): its workflow still runs after the drain (stuck)", e.EventID, e.Type, e.AggregateType, e.AggregateID, e.Sequence)
		case rs[0].status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
			fail("event %s (%s %s/%s seq %d): its workflow ended %s, want completed", e.EventID, e.Type, e.AggregateType, e.AggregateID, e.Sequence, rs[0].status)
		}
	}

	// Every replay delivered.
	still, err := qStillFlagged.All(ctx, s.Pool, namedsql.NoArgs{})
	if err != nil {
		return "", err
	}
	for _, f := range still {
		fail("replay of event %s (%s seq %d, requested %s) was never delivered: the row is still flagged after the drain (published_at set: %v)",
			f.EventID, f.Aggregate, f.Sequence, f.Requested.Format(time.RFC3339Nano), f.Published)
	}

	// A new event behind a replayed one waits for the replay.
	byOrder := map[string][]oracleEvent{}
	for _, e := range events {
		if e.AggregateType == "order" {
			byOrder[e.AggregateID] = append(byOrder[e.AggregateID], e)
		}
	}
	replays := map[string][]time.Time{}
	for _, w := range j.Watches {
		replays[w.EventID] = append(replays[w.EventID], w.Requested)
	}
	delivered := 0
	for _, w := range j.Watches {
		if w.Delivered.IsZero() {
			continue
		}
		delivered++
		if w.Log {
			continue
		}
		for _, e := range byOrder[w.OrderID] {
			rs := runs[e.EventID]
			if e.Sequence <= w.Sequence || len(rs) == 0 {
				continue
			}
			st := rs[len(rs)-1].start
			if !e.Occurred.After(w.CommandEnd) {
				// Committed before the replay returned: if it started
				// before the replay was delivered and was marked after it,
				// within a publish of its start (not a lease's expiry
				// after a crash), both were in flight at once; the replay
				// must wait for it. Its own replay's mark does not count.
				mark := w.LaterMarks[e.EventID]
				if mark != nil && st.Before(w.Delivered) && mark.After(w.Delivered) && mark.Sub(st) < inFlightBound && !replayedBy(replays[e.EventID], *mark) {
					fail("order %s: seq %d (%s) started in Temporal at %s and was marked at %s, while the replay of seq %d (requested %s) was delivered at %s: two events of one order in flight",
						w.OrderID, e.Sequence, e.Type, stamp(st), stamp(*mark), w.Sequence, stamp(w.Requested), stamp(w.Delivered))
				}
				continue
			}
			if !st.After(w.Delivered) {
				fail("order %s: seq %d (%s, committed %s, after the replay of seq %d returned at %s) started in Temporal at %s, before the replay of seq %d was delivered (%s): a successor passed a replayed predecessor",
					w.OrderID, e.Sequence, e.Type, stamp(e.Occurred), w.Sequence, stamp(w.CommandEnd), stamp(st), w.Sequence, stamp(w.Delivered))
			}
		}
	}

	// Skips: poison only, and every poison event.
	skipped, err := qSkippedEvents.All(ctx, s.Pool, namedsql.NoArgs{})
	if err != nil {
		return "", err
	}
	for _, e := range skipped {
		if e.AggregateType != PoisonAggregateType {
			fail("event %s (%s %s) was skipped; the operator skips only poison events", e.EventID, e.AggregateType, e.EventType)
		}
		// Delivered after all: a replay over the skip, say.
		if rs := runs[e.EventID]; len(rs) > 0 {
			fail("skipped event %s (%s %s) was delivered: Temporal has %d run(s) of its workflow, the first started %s",
				e.EventID, e.AggregateType, e.EventType, len(rs), stamp(rs[len(rs)-1].start))
		}
	}
	poisonLeft, err := qUnsettledPoison.Value(ctx, s.Pool, aggregateTypeArgs{AggregateType: PoisonAggregateType})
	if err != nil {
		return "", err
	}
	if poisonLeft != 0 {
		fail("%d events of poison aggregates were neither skipped nor delivered", poisonLeft)
	}

	// Erasures.
	erasureErrs, accepted := checkErasures(ctx, s, j, events, runs)
	errs = append(errs, erasureErrs...)

	// Nothing pending, through the operator's own eyes.
	out, err := s.Outboxctl(ctx, "status", "--json")
	if err != nil {
		return "", fmt.Errorf("outboxctl status --json: %w: %s", err, out)
	}
	var st struct {
		Pending, Quarantined, Replaying int64
		Log                             *struct{ Pending, Holds, Quarantined int64 }
	}
	if err := json.NewDecoder(bytes.NewReader([]byte(out))).Decode(&st); err != nil {
		return "", fmt.Errorf("outboxctl status --json: %w: %s", err, out)
	}
	if st.Pending != 0 || st.Quarantined != 0 || st.Replaying != 0 {
		fail("outboxctl status after the drain: %d pending, %d quarantined, %d replaying; want none", st.Pending, st.Quarantined, st.Replaying)
	}
	if l := st.Log; l != nil && (l.Pending != 0 || l.Holds != 0 || l.Quarantined != 0) {
		fail("outboxctl status after the drain: the log has %d events pending, %d holds, %d quarantined; want none", l.Pending, l.Holds, l.Quarantined)
	}

	for _, u := range j.Unexpected {
		fail("the operator got an unexpected answer: %s", u)
	}
	errs = append(errs, j.poisonViolations()...)
	for _, line := range sortedValues(j.QuarantinedOrders) {
		fail("an order's event was quarantined during the soak (only poison events should be): %s", strings.Join(strings.Fields(line), " "))
	}
	summary := fmt.Sprintf("oracle: %d events one completed run each; %d replays delivered, successors checked; %d skipped events all poison, none delivered (0 runs), %d oversized among them; "+
		"replays of skipped aggregates delivered %d later events again and 0 skipped; %d erasures accepted, %d refusals named their orders",
		len(events), delivered, len(skipped), j.OversizedSkipped, j.LaterRedelivered, accepted, len(j.Refusals))
	return summary, errors.Join(errs...)
}

// poisonViolations are what the journal says went wrong with the poison
// events: a replay of a skipped aggregate that planned other than its
// unskipped events; later events not replayed or not delivered again (or
// none at all: the check would be vacuous); oversized events not seen
// quarantined as their own fault or not skipped, or none enqueued.
func (j Journal) poisonViolations() []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf("oracle: "+format, args...)) }
	for _, r := range j.SkippedReplays {
		fail("a replay of a skipped poison aggregate planned other than its unskipped events (a skipped event delivered again, or a later one left out): %s", r)
	}
	switch {
	case j.LaterEvents == 0:
		fail("no deliverable event was enqueued behind a poison one: nothing shows that a replay over a skip delivers the later events and not the skipped ones")
	case j.LaterReplayed != j.LaterEvents || j.LaterRedelivered != j.LaterEvents:
		fail("%d deliverable events behind poison ones: the replays of the skipped aggregates planned %d, and %d were delivered again; want all of them",
			j.LaterEvents, j.LaterReplayed, j.LaterRedelivered)
	}
	quarantined := 0
	for _, n := range j.OversizedQuarantined {
		quarantined += n
	}
	switch {
	case j.OversizedEvents == 0:
		fail("no oversized event was enqueued")
	case quarantined+j.OversizedAbandoned != j.OversizedEvents || j.OversizedSkipped != j.OversizedEvents:
		fail("%d oversized events enqueued, %d seen quarantined for their size and %d as their own fault otherwise (relays dead or publishes overdue), %d skipped; want all of them quarantined and skipped",
			j.OversizedEvents, quarantined, j.OversizedAbandoned, j.OversizedSkipped)
	}
	return errs
}

// inFlightBound bounds one publish, from Temporal's start to the relay's
// mark, well below the soak's relay lease (3s): a mark later than that
// comes after the lease expired (the publishing relay died).
const inFlightBound = 2 * time.Second

// replayedBy reports whether a replay of the event was requested before t.
func replayedBy(requested []time.Time, t time.Time) bool {
	for _, r := range requested {
		if r.Before(t) {
			return true
		}
	}
	return false
}

// waitRuns lists every run of the stack's task queue until each event has
// one and none runs, or the timeout passes (visibility lags a little behind
// the drain); it then returns what it last saw.
func waitRuns(ctx context.Context, s *Stack, events []oracleEvent, timeout time.Duration) (map[string][]run, error) {
	deadline := time.Now().Add(timeout)
	for {
		runs, err := listRuns(ctx, s)
		settled := err == nil
		for _, e := range events {
			if !settled {
				break
			}
			rs := runs[e.EventID]
			settled = len(rs) > 0 && rs[0].status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
		}
		if settled || (err == nil && time.Now().After(deadline)) {
			return runs, nil
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// listRuns returns every run of the stack's task queue by workflow ID,
// newest first.
func listRuns(ctx context.Context, s *Stack) (map[string][]run, error) {
	out := map[string][]run{}
	var token []byte
	for {
		resp, err := s.Env.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: "default", Query: fmt.Sprintf("TaskQueue = '%s'", s.TaskQueue), PageSize: 1000, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list the workflows of task queue %s: %w", s.TaskQueue, err)
		}
		for _, ex := range resp.GetExecutions() {
			r := run{status: ex.GetStatus(), start: ex.GetStartTime().AsTime()}
			if ex.GetCloseTime() != nil {
				r.close = ex.GetCloseTime().AsTime()
			}
			id := ex.GetExecution().GetWorkflowId()
			out[id] = append(out[id], r)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	for _, rs := range out {
		sort.Slice(rs, func(i, k int) bool { return rs[i].start.After(rs[k].start) })
	}
	return out, nil
}

// erasure is one row of the forget-customer audit; KeyID is empty when the
// customer had no key left to erase.
type erasure struct {
	Subject []byte    `db:"subject"`
	KeyID   string    `db:"key_id"`
	At      time.Time `db:"at"`
}

func erasures(ctx context.Context, s *Stack) ([]erasure, error) {
	return qErasures.All(ctx, s.Pool, namedsql.NoArgs{})
}

var uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// checkErasures: an accepted erasure of key K must come after every
// workflow with a payload under K had closed, and no workflow of an event
// committed after it may have one; a refusal must name the customer's orders, at least
// every one with a workflow that ran through the whole command.
func checkErasures(ctx context.Context, s *Stack, j Journal, events []oracleEvent, runs map[string][]run) ([]error, int) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf("oracle: "+format, args...)) }
	bySubject := map[string]string{}
	for _, c := range j.Customers {
		bySubject[string(codec.SubjectHash(c))] = c
	}
	ofCustomer := map[string][]oracleEvent{}
	for _, e := range events {
		if e.Customer != "" {
			ofCustomer[e.Customer] = append(ofCustomer[e.Customer], e)
		}
	}
	es, err := erasures(ctx, s)
	if err != nil {
		return []error{err}, 0
	}
	accepted := 0
	histories := map[string][]byte{}
	for _, er := range es {
		c, ok := bySubject[string(er.Subject)]
		if !ok || er.KeyID == "" {
			continue
		}
		accepted++
		// erased_at is the erasure's transaction start; its guard asks
		// Temporal later in that transaction, and the key stays readable
		// until the commit. The erasure is accepted by the end of the run
		// that wrote it (erased_at itself when no run is known, e.g. an
		// answer lost with its connection).
		acceptedBy := er.At
		for _, a := range j.Erased {
			if codec.NormalizeEmail(a.Email) == c && !er.At.Before(a.Start) && !er.At.After(a.End) {
				acceptedBy = a.End
			}
		}
		key := codec.CustomerKeyPrefix + er.KeyID
		for _, e := range ofCustomer[c] {
			// Only a workflow with a payload under the erased key in its
			// history needs the key (to replay it).
			h, ok := histories[e.EventID]
			if !ok {
				h, err = rawHistory(ctx, s, e.EventID)
				if err != nil {
					fail("order %s's %s of %s, forgotten at %s: %v", e.AggregateID, e.Type, c, stamp(er.At), err)
					continue
				}
				histories[e.EventID] = h
			}
			if !bytes.Contains(h, []byte(key)) {
				continue
			}
			rs := runs[e.EventID]
			switch {
			case e.Occurred.After(acceptedBy):
				fail("order %s's %s, committed %s after %s was forgotten (%s), was encrypted with the erased key %s",
					e.AggregateID, e.Type, e.Occurred.Sub(er.At).Round(time.Millisecond), c, stamp(er.At), key)
			case len(rs) == 0:
				fail("erasure of %s accepted by %s while order %s's %s (committed %s) had no workflow yet", c, stamp(acceptedBy), e.AggregateID, e.Type, stamp(e.Occurred))
			case rs[len(rs)-1].close.IsZero():
				fail("erasure of %s accepted by %s while order %s's %s workflow (started %s) was running; it is still running after the drain",
					c, stamp(acceptedBy), e.AggregateID, e.Type, stamp(rs[len(rs)-1].start))
			case rs[len(rs)-1].close.After(acceptedBy):
				fail("erasure of %s accepted by %s (transaction from %s) while order %s's %s workflow (started %s) still needed the key: it closed %s later (%s)",
					c, stamp(acceptedBy), stamp(er.At), e.AggregateID, e.Type, stamp(rs[len(rs)-1].start), rs[len(rs)-1].close.Sub(acceptedBy).Round(time.Millisecond), rs[len(rs)-1].status)
			}
		}
	}
	for _, r := range j.Refusals {
		// A refusal may name an order by its id or by a workflow's (an
		// event id).
		ids := map[string]bool{}
		for _, e := range ofCustomer[codec.NormalizeEmail(r.Email)] {
			ids[e.AggregateID] = true
			ids[e.EventID] = true
		}
		named := map[string]bool{}
		for _, id := range uuidPattern.FindAllString(r.Output, -1) {
			named[id] = true
			if !ids[id] {
				fail("forget-customer %s refused naming %s, which is none of the customer's orders or their workflows: %s", r.Email, id, oneLine(r.Output))
			}
		}
		if len(named) == 0 {
			fail("forget-customer %s refused without naming the orders that still need the key: %s", r.Email, oneLine(r.Output))
			continue
		}
		for _, e := range ofCustomer[codec.NormalizeEmail(r.Email)] {
			rs := runs[e.EventID]
			if len(rs) == 0 || named[e.AggregateID] || named[e.EventID] {
				continue
			}
			first := rs[len(rs)-1]
			if first.start.Before(r.Start) && (first.close.IsZero() || first.close.After(r.End)) {
				fail("forget-customer %s refused without naming order %s, whose %s workflow ran through the whole command: %s", r.Email, e.AggregateID, e.Type, oneLine(r.Output))
			}
		}
	}
	return errs, accepted
}

// DiagnoseStuck describes what a drain that timed out waits for: the
// unfinished orders (their customer, whether it was forgotten, and each
// workflow's state, pending task and last failure) and the unpublished
// events.
func DiagnoseStuck(ctx context.Context, s *Stack, j Journal) string {
	var b strings.Builder
	erased := map[string]time.Time{}
	erasedKeys := map[string]time.Time{}
	es, _ := erasures(ctx, s)
	for _, er := range es {
		if er.KeyID != "" {
			erasedKeys[codec.CustomerKeyPrefix+er.KeyID] = er.At
		}
	}
	for _, c := range j.Customers {
		for _, er := range es {
			if er.KeyID != "" && bytes.Equal(er.Subject, codec.SubjectHash(c)) {
				erased[c] = er.At
			}
		}
	}
	us, err := qUnfinished.All(ctx, s.Pool, namedsql.NoArgs{})
	if err != nil {
		return "diagnosis: " + err.Error()
	}
	fmt.Fprintf(&b, "%d orders unfinished:\n", len(us))
	for i, u := range us {
		if i == 10 {
			fmt.Fprintf(&b, "  ...\n")
			break
		}
		note := ""
		if at, ok := erased[u.Customer]; ok {
			note = fmt.Sprintf(", customer last forgotten at %s (the order placed %s after)", stamp(at), u.Created.Sub(at).Round(time.Millisecond))
		}
		fmt.Fprintf(&b, "  order %s: %s (cancel requested %v), placed %s, customer %s%s\n", u.OrderID, u.Status, u.CancelRequested, stamp(u.Created), u.Customer, note)
		for _, id := range u.Events {
			fmt.Fprintf(&b, "    workflow %s: %s\n", id, describeRun(ctx, s, id))
			if keys, err := startKeyIDs(ctx, s, id); err == nil {
				for k := range keys {
					if at, ok := erasedKeys[k]; ok {
						fmt.Fprintf(&b, "      its input is encrypted with %s, erased at %s\n", k, stamp(at))
					}
				}
			}
		}
	}
	if ps, err := qUnpublishedEvents.All(ctx, s.Pool, namedsql.NoArgs{}); err == nil {
		fmt.Fprintf(&b, "unpublished events (first 20): %d\n", len(ps))
		for _, p := range ps {
			fmt.Fprintf(&b, "  %s %s seq %d %s attempts %d quarantined %v %s\n", p.EventID, p.Aggregate, p.Sequence, p.Type, p.Attempts, p.Quarantined, oneLine(p.LastError))
		}
	}
	return b.String()
}

// describeRun is one line on a workflow: its status, its pending workflow
// task and activities, and the last workflow task failure of its history.
func describeRun(ctx context.Context, s *Stack, id string) string {
	desc, err := s.Env.Client.DescribeWorkflow(ctx, id, "")
	if err != nil {
		return "no workflow: " + err.Error()
	}
	d := desc.RawResponse
	parts := []string{d.GetWorkflowExecutionInfo().GetStatus().String()}
	if t := d.GetPendingWorkflowTask(); t != nil {
		parts = append(parts, fmt.Sprintf("workflow task pending (attempt %d)", t.GetAttempt()))
	}
	for _, a := range d.GetPendingActivities() {
		parts = append(parts, fmt.Sprintf("activity %s attempt %d (last failure %q)", a.GetActivityType().GetName(), a.GetAttempt(), a.GetLastFailure().GetMessage()))
	}
	it := s.Env.Client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	last := ""
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			break
		}
		if f := ev.GetWorkflowTaskFailedEventAttributes(); f != nil {
			// The message is encoded (the codec hides failure messages);
			// the stack's codec reads it.
			msg := f.GetFailure().GetMessage()
			if err := s.DataConverter().FailureConverter().FailureToError(f.GetFailure()); err != nil {
				msg = err.Error()
			}
			last = fmt.Sprintf("last workflow task failure: %s %q", f.GetCause(), msg)
		}
	}
	if last != "" {
		parts = append(parts, last)
	}
	return strings.Join(parts, "; ")
}

// rawHistory returns a workflow's whole history as protobuf bytes: a key id
// in it is a payload's metadata ("encryption-key-id").
func rawHistory(ctx context.Context, s *Stack, id string) ([]byte, error) {
	var out []byte
	it := s.Env.Client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of workflow %s: %w", id, err)
		}
		b, err := proto.Marshal(ev)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

// startKeyIDs returns the keys that encrypted a workflow's input, from its
// history's first event (raw: the ids are in the payloads' metadata).
func startKeyIDs(ctx context.Context, s *Stack, id string) (map[string]bool, error) {
	it := s.Env.Client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return nil, fmt.Errorf("workflow %s has no history", id)
	}
	ev, err := it.Next()
	if err != nil {
		return nil, fmt.Errorf("history of workflow %s: %w", id, err)
	}
	ids := map[string]bool{}
	for _, p := range ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads() {
		ids[string(p.GetMetadata()[codec.MetadataKeyID])] = true
	}
	return ids, nil
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000") }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func sortedValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}
