package natspub_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
)

// natsURL is the JetStream server the tests use: NATS_URL, or the one on
// this machine's default port.
func natsURL() string {
	if u := os.Getenv("NATS_URL"); u != "" {
		return u
	}
	return nats.DefaultURL
}

// connect dials the server; the connection closes when the test ends.
func connect(t *testing.T) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(natsURL(), nats.Name("natspub-test"))
	require.NoError(t, err, "the tests need NATS with JetStream at %s (NATS_URL)", natsURL())
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return nc, js
}

// names returns a stream name and a subject prefix no other test uses;
// the stream, once created, is deleted when the test ends.
func names(t *testing.T) (stream, prefix string) {
	t.Helper()
	id := strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	stream, prefix = "TEST_"+strings.ToUpper(id), "test"+id
	// A connection of its own: a test may close the one it publishes on.
	admin, err := nats.Connect(natsURL(), nats.Name("natspub-test-cleanup"))
	require.NoError(t, err)
	t.Cleanup(func() {
		defer admin.Close()
		js, err := jetstream.New(admin)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := js.DeleteStream(ctx, stream); err != nil && !strings.Contains(err.Error(), "not found") {
			t.Errorf("delete stream %s: %v", stream, err)
		}
	})
	return stream, prefix
}

// createStream creates the test's stream with a duplicate window.
func createStream(t *testing.T, js jetstream.JetStream, stream, prefix string, window time.Duration) {
	t.Helper()
	_, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: stream, Subjects: []string{prefix + ".>"}, Storage: jetstream.MemoryStorage, Duplicates: window,
	})
	require.NoError(t, err)
}

// messages reads every message of the stream, in stream order.
func messages(t *testing.T, js jetstream.JetStream, stream string) []jetstream.RawStreamMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	var out []jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		require.NoError(t, err)
		out = append(out, *m)
	}
	return out
}

func enqueue(t *testing.T, pool *pgxpool.Pool, events ...outbox.Event) []outbox.Event {
	t.Helper()
	var out []outbox.Event
	require.NoError(t, pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		var err error
		out, err = outbox.Enqueue(context.Background(), tx, events...)
		return err
	}))
	return out
}

func event(t *testing.T, aggregateID, eventType string) outbox.Event {
	t.Helper()
	e, err := outbox.NewEvent("order", aggregateID, eventType, 1, map[string]string{"order_id": aggregateID})
	require.NoError(t, err)
	return e
}

func payload(t *testing.T, m jetstream.RawStreamMsg) map[string]string {
	t.Helper()
	var p map[string]string
	require.NoError(t, json.Unmarshal(m.Data, &p))
	return p
}

// jetstreamConfig is a test stream that refuses messages over maxMsgSize bytes.
func jetstreamConfig(stream, prefix string, maxMsgSize int32) jetstream.StreamConfig {
	return jetstream.StreamConfig{Name: stream, Subjects: []string{prefix + ".>"}, Storage: jetstream.MemoryStorage, MaxMsgSize: maxMsgSize}
}
