package natspub_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/natspub/dev/natstest"
)

// connect dials the server; the connection closes when the test ends.
func connect(t *testing.T) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return natstest.Connect(t, "natspub-test")
}

// names returns a stream name and a subject prefix no other test uses;
// the stream, once created, is deleted when the test ends.
func names(t *testing.T) (stream, prefix string) {
	t.Helper()
	return natstest.Names(t, "test")
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
	return natstest.Messages(t, js, stream)
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
