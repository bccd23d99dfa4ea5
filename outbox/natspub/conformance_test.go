package natspub_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/conformance/sinktest"
	"github.com/outflow/outflow/outbox/natspub"
	"github.com/outflow/outflow/outbox/natspub/dev/natsserver"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// maxMsgSize is the conformance stream's max_msg_size: the largest message
// (headers and body) it stores.
const maxMsgSize = 64 << 10

// TestSinkConformance: the JetStream publisher passes the sink suite (the
// effect: the messages on the stream whose Nats-Msg-Id is the event's),
// against a NATS server of its own, which the outage stops and starts again
// on its port and store: the machine's shared server is never stopped.
func TestSinkConformance(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := natsserver.Start(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	nc, err := nats.Connect(srv.URL(), nats.Name("natspub-conformance"), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	stream, prefix := "CONFORMANCE", "conformance"
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{prefix + ".>"},
		Storage: jetstream.FileStorage, MaxMsgSize: maxMsgSize, Duplicates: natspub.ServerWindowDefault})
	require.NoError(t, err)
	pub, err := natspub.New(ctx, js, natspub.Config{Stream: stream, SubjectPrefix: prefix})
	require.NoError(t, err)

	sinktest.Run(t, sinktest.Sink{
		Publisher: func(*testing.T) outbox.Publisher { return pub },
		Effects: func(ctx context.Context, e outbox.Event) (int, error) {
			return messagesWithID(ctx, js, stream, e.ID.String())
		},
		// An aggregate ID that is no subject token.
		Refused: func(t *testing.T) outbox.Event {
			e := testdb.Event(t, "a.b", "OrderCreated")
			e.ID, e.Sequence, e.OccurredAt = uuid.New(), 1, time.Now()
			return e
		},
		MaxPayload: maxMsgSize,
		Outage: func(t *testing.T) (back func()) {
			srv.Stop()
			return func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				require.NoError(t, srv.Start(ctx))
			}
		},
	})
}

// messagesWithID counts the messages of the stream whose Nats-Msg-Id is id.
func messagesWithID(ctx context.Context, js jetstream.JetStream, stream, id string) (int, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			return 0, err
		}
		if m.Header.Get(nats.MsgIdHdr) == id {
			n++
		}
	}
	return n, nil
}
