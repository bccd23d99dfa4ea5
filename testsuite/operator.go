package testsuite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/outflow/outflow/outbox/namedsql"
)

// Operator is the on-call engineer of the chaos soak. While the kills run it
// replays recent windows of published events (sometimes one order's, which
// its buyer then cancels at once), retries quarantined and backing-off
// events, skips the poison events the soak enqueues ([EnqueuePoison]) and
// forgets the soak's dedicated customers, each time with the real outboxctl
// binary, as operators do. It keeps a journal of what it did and what it was
// told; the soak's oracle ([CheckOracle]) judges the run against it.
//
// On a log stack (Source "log") it acts over the log as outboxctl allows
// there: it replays one order at a time (a window without an order covers
// the log too, tested by outboxops; the soak names an order so its oracle
// can follow the hold), which makes a hold, and follows the hold until it is released; it
// retries quarantined holds one by one and in bulk (retry --quarantined);
// it skips a quarantined poison hold's head.
type Operator struct {
	s   *Stack
	log bool // the stack's relays read the log
	// OversizedBytes is the payload size of the oversized poison events
	// (TemporalOversizedBytes unless the soak sets it).
	OversizedBytes int
	// Customers are the dedicated customers' emails whose orders the soak
	// places and the operator forgets at random times.
	Customers []string

	rng *rand.Rand // used by the operator's own goroutine only

	mu sync.Mutex
	j  Journal
	// poisoned counts the poison aggregates enqueued (their shapes take
	// turns); oversized are the aggregates whose first event is oversized,
	// seenOversized the oversized events seen quarantined, by id.
	poisoned      int
	oversized     map[string]bool
	seenOversized map[string]bool
}

// Journal is what the operator did and saw.
type Journal struct {
	// Customers are the operator's dedicated customers (emails).
	Customers []string

	ReplayCommands, ReplayedEvents, EmptyReplays, ReplayRefusals int
	LateCancels                                                  int
	Retries, RetryRefusals                                       int
	// BulkRetries counts the retry --quarantined commands (log stacks),
	// BulkRetried the holds they retried.
	BulkRetries, BulkRetried int
	Skips, SkipRefusals      int
	// SkippedAggregates are the poison aggregates whose events the operator
	// skipped; SkippedReplays the replays of them, after every poison event
	// was skipped, that delivered anything (a skipped event published: none
	// must).
	SkippedAggregates []string
	// SkippedReplays are the replays of them, after every poison event was
	// skipped, whose plan was not exactly the aggregate's unskipped events
	// (a skipped event planned for delivery again, or a deliverable one
	// left out): none must be.
	SkippedReplays []string
	// LaterEvents counts the deliverable events enqueued behind a poison
	// event; LaterReplayed those the replays of skipped aggregates
	// planned (the count outboxctl printed), LaterRedelivered those a relay
	// then delivered again (on the log: whose replay's hold was released).
	// A replay that honours the skips delivers the later ones and nothing
	// else, so LaterReplayed = LaterRedelivered = LaterEvents of the
	// skipped aggregates.
	LaterEvents, LaterReplayed, LaterRedelivered int
	// OversizedEvents counts the oversized poison events enqueued;
	// OversizedQuarantined those seen quarantined for their size, by the
	// sink that refused them ("Temporal", "JetStream"); OversizedSkipped
	// those the operator skipped.
	OversizedEvents      int
	OversizedBytes       int
	OversizedQuarantined map[string]int
	OversizedSkipped     int
	// OversizedAbandoned counts oversized events quarantined as their own
	// fault before any sink refused them for their size: every relay that
	// claimed one was killed or stalled past its lease while holding it
	// (the soak kills relays), or its publish ran out of time again while
	// the sink took others (a publish of several MiB on a loaded machine).
	// Never retried for ever either way.
	OversizedAbandoned int

	Forgets, ForgetsWithoutKey, ForgetRefusals int
	// Lost counts commands that lost their database connection (a kill, a
	// backend termination, a PostgreSQL restart) and were run again.
	Lost                           int
	PoisonAggregates, PoisonEvents int

	// Watches are the replayed events the operator followed until a relay
	// delivered them again.
	Watches []*ReplayWatch
	// Refusals are forget-customer's refusals, with their full answer;
	// Erased its runs that erased a key.
	Refusals, Erased []ForgetAnswer
	// QuarantinedOrders are order events the operator saw quarantined
	// (they should not be: only poison events fail for good).
	QuarantinedOrders map[string]string
	// Unexpected are answers of outboxctl the operator did not expect: a
	// usage error, a failure that is neither a refusal nor a lost
	// connection.
	Unexpected []string
}

// ReplayWatch is one replayed event followed until its replay was delivered.
type ReplayWatch struct {
	// Log: a replay of the log, followed by its order's hold (EventID and
	// Sequence are empty: the log replays an order's tail, and marks no
	// event); Delivered is when the operator first saw the hold gone.
	Log              bool
	EventID, OrderID string
	Sequence         int64
	// Requested is the event's replay_requested_at; CommandEnd when the
	// replay command returned (its transaction had committed).
	Requested, CommandEnd time.Time
	// Delivered is the published_at of the mark that cleared the replay;
	// zero while it is pending, or if a later replay superseded it first.
	Delivered  time.Time
	Superseded bool
	// LaterMarks are the published_at of the order's later events when
	// the delivery was seen (nil: unpublished then), by event id.
	LaterMarks map[string]*time.Time
}

// ForgetAnswer is one forget-customer run and its answer.
type ForgetAnswer struct {
	Email      string
	Start, End time.Time
	Output     string
}

// NewOperator returns the operator of s, with n dedicated customers.
func NewOperator(s *Stack, n int, seed uint64) *Operator {
	o := &Operator{s: s, log: s.Source == "log", rng: rand.New(rand.NewPCG(seed, 21)), OversizedBytes: TemporalOversizedBytes,
		oversized: map[string]bool{}, seenOversized: map[string]bool{}}
	tag := strings.ToLower(strconv.FormatUint(seed%1_000_000, 36))
	for i := range n {
		o.Customers = append(o.Customers, fmt.Sprintf("erasure-%d-%s@example.com", i+1, tag))
	}
	o.j.Customers = o.Customers
	o.j.QuarantinedOrders = map[string]string{}
	o.j.OversizedQuarantined = map[string]int{}
	return o
}

// Journal returns a copy of the journal.
func (o *Operator) Journal() Journal {
	o.mu.Lock()
	defer o.mu.Unlock()
	j := o.j
	j.Watches = nil
	for _, w := range o.j.Watches {
		c := *w
		c.LaterMarks = map[string]*time.Time{}
		for k, v := range w.LaterMarks {
			c.LaterMarks[k] = v
		}
		j.Watches = append(j.Watches, &c)
	}
	j.Refusals = append([]ForgetAnswer(nil), o.j.Refusals...)
	j.Erased = append([]ForgetAnswer(nil), o.j.Erased...)
	j.Unexpected = append([]string(nil), o.j.Unexpected...)
	j.SkippedAggregates = append([]string(nil), o.j.SkippedAggregates...)
	j.SkippedReplays = append([]string(nil), o.j.SkippedReplays...)
	j.QuarantinedOrders = map[string]string{}
	for k, v := range o.j.QuarantinedOrders {
		j.QuarantinedOrders[k] = v
	}
	j.OversizedQuarantined = map[string]int{}
	for k, v := range o.j.OversizedQuarantined {
		j.OversizedQuarantined[k] = v
	}
	return j
}

func (o *Operator) note(f func(j *Journal)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f(&o.j)
}

// Run acts every one to two and a half seconds until ctx ends.
func (o *Operator) Run(ctx context.Context) {
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(1000+o.rng.IntN(1500)) * time.Millisecond):
		}
		switch roll := o.rng.IntN(100); {
		case roll < 25:
			o.replayWindow(ctx)
		case roll < 40:
			o.replayAndCancel(ctx)
		case roll < 55:
			o.retry(ctx)
		case roll < 75:
			o.skip(ctx, n)
		default:
			o.forget(ctx, n)
		}
	}
}

// Poison enqueues a poison aggregate ([EnqueuePoison]) for the operator to
// find quarantined and skip; the shapes take turns, so a short soak has
// each: unroutable, invalid, oversized, and a deliverable event behind an
// oversized or an unroutable one.
func (o *Operator) Poison(ctx context.Context) error {
	o.mu.Lock()
	shape := PoisonShape(o.poisoned % int(poisonShapes))
	o.poisoned++
	o.mu.Unlock()
	p, err := EnqueuePoison(ctx, o.s, shape, o.OversizedBytes)
	if err != nil {
		return err
	}
	o.notePoison(p)
	return nil
}

// notePoison records a poison aggregate committed.
func (o *Operator) notePoison(p Poisoned) {
	o.note(func(j *Journal) {
		j.PoisonAggregates++
		j.PoisonEvents += p.Events - p.Later
		j.LaterEvents += p.Later
		if p.Oversized() {
			j.OversizedEvents++
			j.OversizedBytes = o.OversizedBytes
			o.oversized[p.Aggregate] = true
		}
	})
}

// answer is one outboxctl run: its output and exit code (0, 1 or 2), and
// when the attempt that answered started and ended.
type answer struct {
	out        string
	code       int
	start, end time.Time
}

// lostConnection matches what outboxctl says when its database connection
// was cut under it, or the server was down, or Temporal stayed unreachable
// longer than the command's own patience (a cluster node killed or
// restarting mid-command; "failed reaching server" is the SDK's dial): the
// command is run again, as an operator would.
var lostConnection = regexp.MustCompile(`(?i)failed to connect|connection refused|terminating connection|` +
	`57P0[1-3]|shutting down|starting up|unexpected EOF|conn closed|broken pipe|connection reset|` +
	`server closed the connection|closed pool|timeout: context deadline exceeded|recovery mode|failed reaching server`)

// outboxctl runs the CLI until it answers something other than a lost
// connection (for up to a minute). A command that has begun runs to its end,
// and is run again after a lost connection, even when ctx ends meanwhile
// (the load is over): an operator's command cut by the test's clock would
// read as an unexpected answer.
func (o *Operator) outboxctl(ctx context.Context, args ...string) answer {
	deadline := time.Now().Add(time.Minute)
	for {
		a := answer{start: time.Now()}
		var err error
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		a.out, err = o.s.Outboxctl(cctx, args...)
		cancel()
		a.end = time.Now()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit):
			a.code = exit.ExitCode()
		default:
			a.code, a.out = -1, a.out+err.Error()
		}
		// A command cut by the chaos's last kill, as the load ends, is
		// run again too: an answer it never gave is not unexpected.
		if a.code != 1 || !lostConnection.MatchString(a.out) || time.Now().After(deadline) {
			return a
		}
		o.note(func(j *Journal) { j.Lost++ })
		time.Sleep(500 * time.Millisecond)
	}
}

func (o *Operator) unexpected(a answer, args ...string) {
	o.note(func(j *Journal) {
		j.Unexpected = append(j.Unexpected, fmt.Sprintf("outboxctl %s: exit %d: %s", strings.Join(args, " "), a.code, strings.TrimSpace(a.out)))
	})
}

var replayedN = regexp.MustCompile(`replayed (\d+) events`)

// replayWindow replays a window of the last twenty seconds; over the log,
// a recent order's events from its first on (one order, whose hold the
// oracle follows).
func (o *Operator) replayWindow(ctx context.Context) {
	if o.log {
		cs, err := qLateCancelCandidate.All(ctx, o.s.Pool, namedsql.NoArgs{})
		if err != nil || len(cs) == 0 {
			return
		}
		to := time.Now()
		o.replay(ctx, []string{"replay", "--from", cs[0].Occurred.Format(time.RFC3339Nano), "--to", to.Format(time.RFC3339Nano),
			"--aggregate-type", "order", "--aggregate", cs[0].OrderID, "--yes"}, cs[0].Occurred, to, cs[0].OrderID)
		return
	}
	from := time.Now().Add(-time.Duration(3000+o.rng.IntN(17000)) * time.Millisecond)
	to := from.Add(time.Duration(1000+o.rng.IntN(5000)) * time.Millisecond)
	args := []string{"replay", "--from", from.Format(time.RFC3339Nano), "--to", to.Format(time.RFC3339Nano), "--yes"}
	if o.rng.IntN(2) == 0 {
		args = append(args, "--aggregate-type", "order")
	}
	o.replay(ctx, args, from, to, "")
}

// replayAndCancel replays one recently confirmed order and has its buyer
// cancel it right after: the cancel is a new event behind a replayed one,
// and must wait until the replay is delivered. Or the buyer cancels first
// and the replay follows at once, while the cancel may be in flight: the
// replay must then wait for it.
func (o *Operator) replayAndCancel(ctx context.Context) {
	cs, err := qLateCancelCandidate.All(ctx, o.s.Pool, namedsql.NoArgs{})
	if err != nil || len(cs) == 0 {
		return // a terminated backend, or none; next time
	}
	c := cs[0]
	cancelFirst := o.rng.IntN(2) == 0
	cancel := func() bool {
		if err := o.s.API().Cancel(ctx, c.OrderID); err != nil {
			o.note(func(j *Journal) { j.Unexpected = append(j.Unexpected, "late cancel beside a replay: "+err.Error()) })
			return false
		}
		o.note(func(j *Journal) { j.LateCancels++ })
		return true
	}
	if cancelFirst && !cancel() {
		return
	}
	to := time.Now()
	args := []string{"replay", "--from", c.Occurred.Format(time.RFC3339Nano), "--to", to.Format(time.RFC3339Nano),
		"--aggregate", c.OrderID, "--yes"}
	if o.log {
		// The log's events are not found by id alone.
		args = append(args, "--aggregate-type", "order")
	}
	if o.replay(ctx, args, c.Occurred, to, c.OrderID) && !cancelFirst {
		cancel()
	}
}

// replay runs one replay command and watches the events it flagged; it
// reports whether events were replayed.
func (o *Operator) replay(ctx context.Context, args []string, from, to time.Time, orderID string) bool {
	a := o.outboxctl(ctx, args...)
	switch {
	case a.code == 0 && strings.Contains(a.out, "nothing to replay"):
		o.note(func(j *Journal) { j.ReplayCommands++; j.EmptyReplays++ })
		return false
	case a.code == 0:
		m := replayedN.FindStringSubmatch(a.out)
		if m == nil {
			o.unexpected(a, args...)
			return false
		}
		n, _ := strconv.Atoi(m[1])
		o.note(func(j *Journal) { j.ReplayCommands++; j.ReplayedEvents += n })
	case a.code == 1 && (strings.Contains(a.out, "invalid replay window") || o.log && strings.Contains(a.out, "under a hold")):
		// Over the log, an order under a hold (a failed publish, an
		// isolated event, an earlier replay not yet delivered) is refused.
		o.note(func(j *Journal) { j.ReplayCommands++; j.ReplayRefusals++ })
		return false
	default:
		o.unexpected(a, args...)
		return false
	}
	if o.log {
		o.note(func(j *Journal) {
			j.Watches = append(j.Watches, &ReplayWatch{Log: true, OrderID: orderID, Requested: a.start, CommandEnd: a.end})
		})
		return true
	}
	// Follow what it flagged (events a relay marked before this query are
	// missed: the watch is a sample, never a false alarm).
	fs, err := qReplayFlagged.All(ctx, o.s.Pool, replayFlaggedArgs{Since: a.start, From: from, To: to, Aggregate: orderID})
	if err != nil {
		return true
	}
	o.note(func(j *Journal) {
		for _, f := range fs {
			j.Watches = append(j.Watches, &ReplayWatch{EventID: f.EventID, OrderID: f.OrderID, Sequence: f.Sequence,
				Requested: f.Requested, CommandEnd: a.end})
		}
	})
	return true
}

// Watch follows the replayed events until ctx ends: a replay is delivered
// when a mark clears its flag (published_at is then the mark's time).
func (o *Operator) Watch(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		o.Poll(ctx)
	}
}

// Poll looks once at the replays not yet delivered, and at the later
// events of delivered ones' orders that were not yet marked when the
// delivery was seen.
func (o *Operator) Poll(ctx context.Context) {
	if o.log {
		o.pollLog(ctx)
		return
	}
	o.mu.Lock()
	var ids, orderOf []string // open watches' events; those and the followed ones'
	open := map[string][]*ReplayWatch{}
	var following []*ReplayWatch
	for _, w := range o.j.Watches {
		switch {
		case w.Delivered.IsZero() && !w.Superseded:
			ids = append(ids, w.EventID)
			open[w.EventID] = append(open[w.EventID], w)
		case !w.Delivered.IsZero() && unmarked(w.LaterMarks):
			following = append(following, w)
		}
	}
	orderOf = append(orderOf, ids...)
	for _, w := range following {
		orderOf = append(orderOf, w.EventID)
	}
	o.mu.Unlock()
	if len(orderOf) == 0 {
		return
	}
	var ps []replayProgressRow
	if len(ids) > 0 {
		var err error
		if ps, err = qReplayProgress.All(ctx, o.s.Pool, eventIDsArgs{IDs: ids}); err != nil {
			return
		}
	}
	// The events of the watched orders, to see whether a later one was
	// still in flight when a replay was delivered.
	ls, err := qOrderMarks.All(ctx, o.s.Pool, eventIDsArgs{IDs: orderOf})
	if err != nil {
		return
	}
	later := map[string][]laterEvent{}
	for _, l := range ls {
		later[l.OrderID] = append(later[l.OrderID], l)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, w := range following {
		for _, l := range later[w.OrderID] {
			if m, ok := w.LaterMarks[l.EventID]; ok && m == nil && l.Published != nil {
				w.LaterMarks[l.EventID] = l.Published
			}
		}
	}
	for _, p := range ps {
		for _, w := range open[p.EventID] {
			switch {
			case p.Requested == nil && p.Published != nil && o.requestedBetween(w, *p.Published):
				// A later replay of the event was requested and marked
				// between two looks: this mark may be the later one's.
				w.Superseded = true
			case p.Requested == nil && p.Published != nil:
				w.Delivered = *p.Published
				w.LaterMarks = map[string]*time.Time{}
				for _, l := range later[w.OrderID] {
					if l.Sequence > w.Sequence {
						w.LaterMarks[l.EventID] = l.Published
					}
				}
			case p.Requested != nil && !p.Requested.Equal(w.Requested):
				w.Superseded = true
			}
		}
	}
}

// pollLog looks once at the log replays not yet delivered: one is
// delivered when its order's replay hold is gone.
func (o *Operator) pollLog(ctx context.Context) {
	o.mu.Lock()
	var orders []string
	for _, w := range o.j.Watches {
		if w.Delivered.IsZero() {
			orders = append(orders, w.OrderID)
		}
	}
	o.mu.Unlock()
	if len(orders) == 0 {
		return
	}
	held, err := qLogReplayHolds.All(ctx, o.s.Pool, orderIDsArgs{OrderIDs: orders})
	if err != nil {
		return
	}
	now := time.Now()
	still := map[string]bool{}
	for _, id := range held {
		still[id] = true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, w := range o.j.Watches {
		if w.Delivered.IsZero() && !still[w.OrderID] {
			w.Delivered = now
		}
	}
}

// unmarked reports whether one of the later events was not marked yet.
func unmarked(marks map[string]*time.Time) bool {
	for _, m := range marks {
		if m == nil {
			return true
		}
	}
	return false
}

// laterEvent is an event of a replayed event's order and its mark.
type laterEvent struct {
	OrderID   string     `db:"order_id"`
	EventID   string     `db:"event_id"`
	Sequence  int64      `db:"sequence"`
	Published *time.Time `db:"published"`
}

// requestedBetween reports whether another replay of w's event was
// requested after w's and no later than t. Called with o.mu held.
func (o *Operator) requestedBetween(w *ReplayWatch, t time.Time) bool {
	for _, x := range o.j.Watches {
		if x != w && x.EventID == w.EventID && x.Requested.After(w.Requested) && !x.Requested.After(t) {
			return true
		}
	}
	return false
}

// listed is one event of `outboxctl list --json`, or a quarantined log
// hold by its head (id "" when it has none left).
type listed struct {
	id, typ, aggregate, state, lastError string
	seq                                  int64
}

// listedJSON is what `outboxctl list --json` prints of an event or a log
// hold (the keys both share).
type listedJSON struct {
	EventID       string `json:"event_id"`
	EventType     string `json:"event_type"`
	AggregateType string `json:"aggregate_type"`
	AggregateID   string `json:"aggregate_id"`
	Sequence      int64  `json:"aggregate_sequence"`
	Attempts      int    `json:"attempt_count"`
	State         string `json:"state"`
	LastError     string `json:"last_error"`
}

// sizeRefusals tell, in a quarantined event's last error, which sink
// refused it for its size: outbox/temporalpub's and outbox/natspub's
// permanent errors.
// abandonedError is in the last error of an event the relay quarantined
// because every relay that claimed it lost its lease before recording an
// outcome (outbox/internal/relaysql's RelayClaim).
const abandonedError = "lost its lease before recording an outcome"

// overdueError is in the last error of an event whose publish ran out of
// time again while the sink acknowledged other publishes (package outbox's
// rule: the event's own fault).
const overdueError = "ran out of time again while the sink acknowledged other publishes"

var sizeRefusals = map[string]string{
	"Temporal":  "larger than Temporal accepts",
	"JetStream": "the stream takes no message this large",
}

func (o *Operator) list(ctx context.Context, filter string) []listed {
	args := []string{"list", filter, "--limit", "500", "--json"}
	a := o.outboxctl(ctx, args...)
	var rows []listedJSON
	if a.code == 0 {
		if err := json.Unmarshal([]byte(a.out), &rows); err != nil {
			a.code, a.out = -1, a.out+err.Error()
		}
	}
	if a.code != 0 {
		o.unexpected(a, args...)
		return nil
	}
	var out []listed
	for _, r := range rows {
		l := listed{id: r.EventID, typ: r.EventType, aggregate: r.AggregateType + "/" + r.AggregateID, state: r.State, lastError: r.LastError, seq: r.Sequence}
		if l.state == "quarantined" {
			o.noteQuarantined(l, r.AggregateType, r.AggregateID)
		}
		out = append(out, l)
	}
	return out
}

// noteQuarantined notes a quarantined event seen: an order's, which no
// healthy event should be, or an oversized poison event's, the first time
// it is seen, by the sink whose size refusal its last error is (another
// error is unexpected: the relay must class a size refusal as the event's
// own fault at once).
func (o *Operator) noteQuarantined(l listed, aggregateType, aggregateID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if aggregateType != PoisonAggregateType {
		o.j.QuarantinedOrders[l.id] = fmt.Sprintf("%s %s %s seq=%d: %s", l.id, l.typ, l.aggregate, l.seq, oneLine(l.lastError))
		return
	}
	if !o.oversized[aggregateID] || l.seq != 1 || l.id == "" || o.seenOversized[l.id] {
		return
	}
	o.seenOversized[l.id] = true
	for sink, words := range sizeRefusals {
		if strings.Contains(l.lastError, words) {
			o.j.OversizedQuarantined[sink]++
			return
		}
	}
	if strings.Contains(l.lastError, abandonedError) || strings.Contains(l.lastError, overdueError) {
		o.j.OversizedAbandoned++
		return
	}
	o.j.Unexpected = append(o.j.Unexpected, fmt.Sprintf("oversized event %s (%s) quarantined for something else than its size: %s", l.id, l.aggregate, oneLine(l.lastError)))
}

// retry retries a backing-off or quarantined event, as found by list, or
// over the log sometimes every quarantined hold at once.
func (o *Operator) retry(ctx context.Context) {
	if o.log && o.rng.IntN(3) == 0 {
		o.retryAll(ctx)
		return
	}
	o.retryOne(ctx)
}

// retryOne retries one backing-off or quarantined event, as found by list.
func (o *Operator) retryOne(ctx context.Context) {
	var candidates []listed
	if !o.log {
		// The log's held events back off inside their hold; only a
		// quarantined hold may be retried.
		for _, l := range o.list(ctx, "--pending") {
			if l.state == "backing_off" {
				candidates = append(candidates, l)
			}
		}
	}
	candidates = append(candidates, o.list(ctx, "--quarantined")...)
	if len(candidates) == 0 {
		return
	}
	c := candidates[o.rng.IntN(len(candidates))]
	if c.id == "" {
		return // a log hold with no head left: released meanwhile
	}
	a := o.outboxctl(ctx, "retry", c.id, "--yes")
	switch {
	case a.code == 0:
		o.note(func(j *Journal) { j.Retries++ })
	case a.code == 1 && strings.Contains(a.out, "does not allow this"):
		// Published, skipped or in flight since the list: the refusal says
		// which.
		o.note(func(j *Journal) { j.RetryRefusals++ })
	default:
		o.unexpected(a, "retry", c.id)
	}
}

var retriedHolds = regexp.MustCompile(`retried (\d+) quarantined log holds`)

// retryAll retries every quarantined hold at once (retry --quarantined,
// audited), as after a fixed deploy: the poison ones fail and are
// quarantined again.
func (o *Operator) retryAll(ctx context.Context) {
	args := []string{"retry", "--quarantined", "--reason", "soak: the route is fixed, try again", "--actor", "soak-operator", "--yes"}
	a := o.outboxctl(ctx, args...)
	if a.code != 0 {
		o.unexpected(a, args...)
		return
	}
	// None matched, or those it counted were skipped or retried since:
	// no line on log holds.
	n := 0
	if m := retriedHolds.FindStringSubmatch(a.out); m != nil {
		n, _ = strconv.Atoi(m[1])
	}
	o.note(func(j *Journal) { j.BulkRetries++; j.BulkRetried += n })
}

// skip skips one quarantined poison event (never an order's event).
func (o *Operator) skip(ctx context.Context, n int) bool {
	var poison []listed
	for _, l := range o.list(ctx, "--quarantined") {
		if strings.HasPrefix(l.aggregate, PoisonAggregateType+"/") && l.id != "" {
			poison = append(poison, l)
		}
	}
	if len(poison) == 0 {
		return false
	}
	p := poison[o.rng.IntN(len(poison))]
	args := []string{"skip", p.id, "--reason", fmt.Sprintf("soak: %s can never be delivered (bad deploy); handled by hand, ticket SOAK-%d", p.typ, n),
		"--actor", "soak-operator", "--yes"}
	a := o.outboxctl(ctx, args...)
	switch {
	case a.code == 0:
		o.note(func(j *Journal) {
			j.Skips++
			agg := strings.TrimPrefix(p.aggregate, PoisonAggregateType+"/")
			if !slices.Contains(j.SkippedAggregates, agg) {
				j.SkippedAggregates = append(j.SkippedAggregates, agg)
			}
			if o.oversized[agg] && p.seq == 1 {
				j.OversizedSkipped++
			}
		})
		return true
	case a.code == 1 && (strings.Contains(a.out, "does not allow this") ||
		o.log && (strings.Contains(a.out, "not the head of a quarantined hold") || strings.Contains(a.out, "no quarantined hold"))):
		o.note(func(j *Journal) { j.SkipRefusals++ }) // retried meanwhile
	default:
		o.unexpected(a, args...)
	}
	return false
}

// forget forgets one of the dedicated customers. After a refusal it
// sometimes does what the refusal advises: it waits until the order table
// shows every order of the customer settled, and runs it again at once.
func (o *Operator) forget(ctx context.Context, n int) {
	email := o.Customers[o.rng.IntN(len(o.Customers))]
	if !o.forgetOnce(ctx, email, n) || o.rng.IntN(2) == 0 {
		return
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if unsettled, err := qCustomerUnsettled.Value(ctx, o.s.Pool, emailArgs{Email: email}); err == nil && unsettled == 0 {
			o.forgetOnce(ctx, email, n)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// forgetOnce runs forget-customer once and reports whether it was refused.
func (o *Operator) forgetOnce(ctx context.Context, email string, n int) (refused bool) {
	args := []string{"forget-customer", email, "--reason", fmt.Sprintf("soak: erasure request PRIV-%d", n), "--actor", "soak-operator", "--yes"}
	a := o.outboxctl(ctx, args...)
	switch {
	case a.code == 0 && strings.Contains(a.out, "forgot customer key"):
		o.note(func(j *Journal) {
			j.Forgets++
			j.Erased = append(j.Erased, ForgetAnswer{Email: email, Start: a.start, End: a.end, Output: a.out})
		})
	case a.code == 0 && strings.Contains(a.out, "no customer key to erase"):
		o.note(func(j *Journal) { j.ForgetsWithoutKey++ })
	case a.code == 1:
		// A refusal (a lost connection was run again): the oracle checks
		// that it names the orders that still need the key.
		o.note(func(j *Journal) {
			j.ForgetRefusals++
			j.Refusals = append(j.Refusals, ForgetAnswer{Email: email, Start: a.start, End: a.end, Output: a.out})
		})
		return true
	default:
		o.unexpected(a, args...)
	}
	return false
}

// Finish skips every poison event left, each once a relay has quarantined
// it (a later one waits for its predecessor's skip), until none is left or
// the timeout passes.
//
// Over the log, whose short soak may roll no retry or replay, it first does
// what the run left undone: a replay of a recent order, a retry of a
// quarantined hold's head and a bulk retry, so every run acts over the log
// at least once each way.
//
// Once every poison event is skipped, it replays each poison aggregate it
// skipped, over the whole run: a skipped event is never delivered, not even
// by a replay, so each such replay must plan the aggregate's unskipped
// events (the deliverable ones behind its poison), and nothing else, and
// a relay must deliver those again ([Operator.replaySkipped]).
func (o *Operator) Finish(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	since := deadline.Add(-24 * time.Hour)
	if o.log {
		j := o.Journal()
		if j.ReplayCommands == 0 {
			o.replayWindow(ctx)
		}
		for j.Retries+j.RetryRefusals == 0 && len(o.list(ctx, "--quarantined")) == 0 && time.Now().Before(deadline) {
			// The poison events left are quarantined at their first
			// attempt: wait for one, if any is left.
			if left, err := qUnsettledPoison.Value(ctx, o.s.Pool, aggregateTypeArgs{AggregateType: PoisonAggregateType}); err == nil && left == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
		}
		if j.Retries+j.RetryRefusals == 0 {
			o.retryOne(ctx)
		}
		if j.BulkRetries == 0 {
			o.retryAll(ctx)
		}
	}
	for n := 10_000; ; n++ {
		left, err := qUnsettledPoison.Value(ctx, o.s.Pool, aggregateTypeArgs{AggregateType: PoisonAggregateType})
		if err == nil && left == 0 {
			o.replaySkipped(ctx, since, time.Until(deadline)+time.Minute)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("operator: %d poison events still not skipped after %s (err %v)", left, timeout, err)
		}
		if !o.skip(ctx, n) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
}

// replaySkipped replays each skipped poison aggregate from since on. A
// skipped event is never delivered, not even by a replay, so each replay
// must plan exactly the aggregate's unskipped events (the deliverable
// events behind its poison ones), which a relay must then deliver again;
// an aggregate with none has nothing to replay. It first waits until those
// are published (each was waiting for its predecessor's skip), so the
// replay's plan cannot race their first delivery, and last until every
// replay is delivered, or the timeout passes.
func (o *Operator) replaySkipped(ctx context.Context, since time.Time, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		left, err := qUnsettledPoison.Value(ctx, o.s.Pool, aggregateTypeArgs{AggregateType: PoisonAggregateType})
		if err == nil && left == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
	type replayed struct {
		agg   string
		n     int
		start time.Time
	}
	var done []replayed
	for _, agg := range o.Journal().SkippedAggregates {
		want, err := qPoisonDeliverable.Value(ctx, o.s.Pool, aggregateArgs{AggregateType: PoisonAggregateType, AggregateID: agg})
		if err != nil {
			o.note(func(j *Journal) {
				j.Unexpected = append(j.Unexpected, "count the unskipped events of poison aggregate "+agg+": "+err.Error())
			})
			continue
		}
		args := []string{"replay", "--from", since.UTC().Format(time.RFC3339Nano), "--to", time.Now().UTC().Format(time.RFC3339Nano),
			"--aggregate-type", PoisonAggregateType, "--aggregate", agg, "--yes"}
		a := o.outboxctl(ctx, args...)
		n := -1
		switch m := replayedN.FindStringSubmatch(a.out); {
		case a.code == 0 && strings.Contains(a.out, "nothing to replay"):
			n = 0
			o.note(func(j *Journal) { j.ReplayCommands++; j.EmptyReplays++ })
		case a.code == 0 && m != nil:
			n, _ = strconv.Atoi(m[1])
			o.note(func(j *Journal) { j.ReplayCommands++; j.ReplayedEvents += n; j.LaterReplayed += n })
		default:
			o.unexpected(a, args...)
			continue
		}
		if int64(n) != want {
			o.note(func(j *Journal) {
				j.SkippedReplays = append(j.SkippedReplays, fmt.Sprintf("%s: %d unskipped events, the replay planned %d: %s", agg, want, n, oneLine(a.out)))
			})
		}
		if n > 0 {
			done = append(done, replayed{agg: agg, n: n, start: a.start})
		}
	}
	if len(done) == 0 {
		return
	}
	for {
		left, err := qPoisonReplaysPending.Value(ctx, o.s.Pool, aggregateTypeArgs{AggregateType: PoisonAggregateType})
		if err == nil && left == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
	// Delivered again: over the log, the replay's hold is gone (the log
	// marks no event); elsewhere the relay's mark cleared the flag and
	// set published_at after the replay began.
	for _, r := range done {
		n := int64(r.n)
		if !o.log {
			var err error
			if n, err = qPoisonRedelivered.Value(ctx, o.s.Pool, redeliveredArgs{AggregateType: PoisonAggregateType, AggregateID: r.agg, Since: r.start}); err != nil {
				continue
			}
		} else if held, err := qPoisonReplayHeld.Value(ctx, o.s.Pool, aggregateArgs{AggregateType: PoisonAggregateType, AggregateID: r.agg}); err != nil || held {
			continue
		}
		o.note(func(j *Journal) { j.LaterRedelivered += int(n) })
	}
}

// Details are the journal's unexpected answers and quarantined order
// events, for a failed soak's log.
func (j Journal) Details() string {
	var b strings.Builder
	for _, u := range j.Unexpected {
		fmt.Fprintf(&b, "  unexpected: %s\n", oneLine(u))
	}
	for _, line := range sortedValues(j.QuarantinedOrders) {
		fmt.Fprintf(&b, "  order event quarantined: %s\n", line)
	}
	return b.String()
}

// Report is the journal's counts, for the soak's report.
func (j Journal) Report() string {
	quarantined := 0
	var bySink []string
	for _, sink := range slices.Sorted(maps.Keys(j.OversizedQuarantined)) {
		quarantined += j.OversizedQuarantined[sink]
		bySink = append(bySink, fmt.Sprintf("%d refused by %s", j.OversizedQuarantined[sink], sink))
	}
	if len(bySink) == 0 {
		bySink = []string{"none"}
	}
	oversizedBytes := j.OversizedBytes
	delivered, superseded := 0, 0
	for _, w := range j.Watches {
		switch {
		case !w.Delivered.IsZero():
			delivered++
		case w.Superseded:
			superseded++
		}
	}
	return fmt.Sprintf(`  operator replays:         %d commands (%d events replayed, %d windows empty, %d refused), %d late cancels right before or after a replay; %d replayed events watched: %d delivered again, %d superseded by a later replay
  operator retries:         %d (%d refused: published, skipped or in flight since the list); %d bulk retries of %d holds
  operator skips:           %d of %d poison events in %d aggregates (%d refused); %d skipped aggregates replayed after, %d of them planning other than their unskipped events
  oversized events:         %d enqueued (%d bytes of payload each), %d quarantined for their size (%s), %d as their own fault otherwise (relays dead or publishes overdue), %d skipped
  events behind poison:     %d enqueued, delivered once their poison was skipped; the replays of the skipped aggregates planned %d of them, %d delivered again, 0 skipped ones
  operator forgets:         %d keys erased, %d with no key left, %d refused
  operator, other:          %d commands run again after a lost connection, %d unexpected answers, %d order events seen quarantined`,
		j.ReplayCommands, j.ReplayedEvents, j.EmptyReplays, j.ReplayRefusals, j.LateCancels, len(j.Watches), delivered, superseded,
		j.Retries, j.RetryRefusals, j.BulkRetries, j.BulkRetried,
		j.Skips, j.PoisonEvents, j.PoisonAggregates, j.SkipRefusals, len(j.SkippedAggregates), len(j.SkippedReplays),
		j.OversizedEvents, oversizedBytes, quarantined, strings.Join(bySink, ", "), j.OversizedAbandoned, j.OversizedSkipped,
		j.LaterEvents, j.LaterReplayed, j.LaterRedelivered,
		j.Forgets, j.ForgetsWithoutKey, j.ForgetRefusals,
		j.Lost, len(j.Unexpected), len(j.QuarantinedOrders))
}
