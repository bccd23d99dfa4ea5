package testsuite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/outflow/outflow/outbox/namedsql"
)

// JetStreamURLDefault is the NATS server the JetStream stacks use unless a
// test gives its own (the machine's, JetStream enabled).
const JetStreamURLDefault = nats.DefaultURL

// UseJetStream makes the stack's starters publish to both sinks
// (OUTFLOW_SINKS=temporal,jetstream) on a stream and subject prefix of the
// stack's own on the NATS server at url, and its "orderfeed" processes
// consume them; the stream is deleted when the test ends. Call it before
// starting the processes. It returns the stream's name.
func (s *Stack) UseJetStream(url string) string {
	s.T.Helper()
	id := strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	stream, prefix := "SUITE_"+strings.ToUpper(id), "suite"+id
	nats := []string{"OUTFLOW_NATS_URL=" + url, "OUTFLOW_NATS_STREAM=" + stream, "OUTFLOW_NATS_SUBJECT_PREFIX=" + prefix}
	s.RelayEnv = append(s.RelayEnv, append([]string{"OUTFLOW_SINKS=temporal,jetstream"}, nats...)...)
	s.FeedEnv = append(s.FeedEnv, nats...)
	s.T.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := deleteStream(ctx, url, stream); err != nil {
			s.T.Logf("testsuite: delete stream %s: %v", stream, err)
		}
	})
	return stream
}

func deleteStream(ctx context.Context, url, stream string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	err = js.DeleteStream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	return err
}

// feedFacts is one order as the JetStream consumer (cmd/orderfeed) holds it.
type feedFacts struct {
	OrderID         string `db:"order_id"`
	Events          int64  `db:"events"`
	MaxSequence     int64  `db:"max_sequence"`
	CancelledEvents int64  `db:"cancelled_events"`
	InboxRows       int64  `db:"inbox_rows"`
	LastSequence    int64  `db:"last_sequence"`
	EventsApplied   int64  `db:"events_applied"`
	Status          string `db:"status"`
}

// CheckFeed checks the invariants at the JetStream consumer's table: every
// event of every order applied exactly once (one inbox row each, the
// order's row counting as many applied events as the order has), in the
// order's sequence (the position at the order's last event), none lost,
// and the row's status the one its events say.
func CheckFeed(ctx context.Context, pool *pgxpool.Pool) (orders int, err error) {
	facts, err := qFeedFacts.All(ctx, pool, namedsql.NoArgs{})
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, f := range facts {
		want := "created"
		if f.CancelledEvents > 0 {
			want = "cancelled"
		}
		switch {
		case f.InboxRows != f.Events:
			errs = append(errs, fmt.Errorf("order %s: %d of its %d events in the consumer's inbox", f.OrderID, f.InboxRows, f.Events))
		case f.EventsApplied != f.Events:
			errs = append(errs, fmt.Errorf("order %s: %d events applied for its %d (each must be applied once)", f.OrderID, f.EventsApplied, f.Events))
		case f.LastSequence != f.MaxSequence:
			errs = append(errs, fmt.Errorf("order %s: the consumer's position is %d, its last event %d", f.OrderID, f.LastSequence, f.MaxSequence))
		case f.Status != want:
			errs = append(errs, fmt.Errorf("order %s: status %q at the consumer, its events say %q", f.OrderID, f.Status, want))
		}
	}
	return len(facts), errors.Join(errs...)
}

// WaitFeed waits until [CheckFeed] passes, and returns its last error when
// it does not within timeout.
func WaitFeed(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		n, err := CheckFeed(ctx, pool)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return n, err
		}
		time.Sleep(500 * time.Millisecond)
	}
}
