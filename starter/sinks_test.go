package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/natscodec"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/natspub"
	"github.com/outflow/outflow/outbox/natspub/dev/natstest"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestSinksRejectUnknownValue: a sink outflow does not know stops the
// starter at once with an error naming the ones it does.
func TestSinksRejectUnknownValue(t *testing.T) {
	t.Parallel()
	_, url := testdb.New(t)
	p := startStarter(t, url, "sinks-"+uuid.NewString()[:8], SinksEnv+"=temporal,kafka")
	err := p.wait(t, 30*time.Second)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 2, exit.ExitCode(), "a configuration error")
	require.Contains(t, p.output(), `"kafka" is no sink; want temporal (the default), jetstream, or temporal,jetstream`)
}

// testStream returns a stream name and subject prefix of the test's own,
// and deletes the stream when the test ends.
func testStream(t *testing.T) (jetstream.JetStream, string, string) {
	t.Helper()
	nc, err := nats.Connect(nats.DefaultURL)
	require.NoError(t, err, "the test needs NATS with JetStream at %s", nats.DefaultURL)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	id := strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	stream := "STARTER_" + strings.ToUpper(id)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, stream)
	})
	return js, stream, "starter" + id
}

// TestJetStreamSinkOnly: with OUTFLOW_SINKS=jetstream the starter creates
// the stream with the window its relay needs, publishes every event to it
// (no Temporal workflow is started) and marks each after its PubAck; with
// both sinks each event also starts its workflow.
func TestJetStreamSinkOnly(t *testing.T) {
	t.Parallel()
	for _, sinks := range []string{"jetstream", "temporal,jetstream"} {
		t.Run(sinks, func(t *testing.T) {
			t.Parallel()
			pool, url := testdb.New(t)
			js, stream, prefix := testStream(t)
			tq := "sinks-" + uuid.NewString()[:8]
			events := enqueueOrders(t, pool, 3)
			p := startStarter(t, url, tq, SinksEnv+"="+sinks, NATSStreamEnv+"="+stream, NATSSubjectPrefixEnv+"="+prefix,
				"OUTFLOW_RELAY_POLL=200ms")
			waitPublished(t, pool, events, 60*time.Second)
			p.terminate(t)
			require.Contains(t, p.output(), "sinks="+sinks)

			s, err := js.Stream(context.Background(), stream)
			require.NoError(t, err)
			require.Equal(t, uint64(3), s.CachedInfo().State.Msgs)
			require.Equal(t, 2*time.Minute, s.CachedInfo().Config.Duplicates, "the relay's 70s need, at least NATS's default")
			for _, e := range events {
				m, err := s.GetLastMsgForSubject(context.Background(), prefix+".order."+e.AggregateID)
				require.NoError(t, err)
				require.Equal(t, e.ID.String(), m.Header.Get(nats.MsgIdHdr))
			}
			if strings.HasPrefix(sinks, "temporal") {
				requireWorkflowCount(t, tq, len(events))
			} else {
				requireWorkflowCount(t, tq, 0)
			}
		})
	}
}

// TestJetStreamSinkRefusesAShortWindow: a stream whose duplicate window is
// shorter than the relay's lease + publish timeout + probe pause stops the
// starter with an error that names both.
func TestJetStreamSinkRefusesAShortWindow(t *testing.T) {
	t.Parallel()
	_, url := testdb.New(t)
	js, stream, prefix := testStream(t)
	_, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: stream, Subjects: []string{prefix + ".>"},
		Storage: jetstream.MemoryStorage, Duplicates: 20 * time.Second})
	require.NoError(t, err)
	p := startStarter(t, url, "sinks-"+uuid.NewString()[:8], SinksEnv+"=jetstream", NATSStreamEnv+"="+stream, NATSSubjectPrefixEnv+"="+prefix)
	require.Error(t, p.wait(t, 30*time.Second))
	require.Contains(t, p.output(), "duplicate window")
	require.Contains(t, p.output(), "shorter than the 1m10s the relay needs")
}

// TestJetStreamCrashAfterPubAckThenRestart: the starter dies of SIGKILL
// after the stream's PubAck, before the mark (jetstream.after_ack).
// Restarted, it publishes the event again once the dead one's lease
// expired; the stream answers duplicate (one message per event), and every
// event is marked.
func TestJetStreamCrashAfterPubAckThenRestart(t *testing.T) {
	t.Parallel()
	pool, url := testdb.New(t)
	js, stream, prefix := testStream(t)
	tq := "sinks-crash-" + uuid.NewString()[:8]
	events := enqueueOrders(t, pool, 3)
	env := []string{SinksEnv + "=jetstream", NATSStreamEnv + "=" + stream, NATSSubjectPrefixEnv + "=" + prefix,
		"OUTFLOW_RELAY_LEASE=2s", "OUTFLOW_RELAY_POLL=200ms"}
	crashed := startStarter(t, url, tq, append(env, "OUTFLOW_FAILPOINTS=jetstream.after_ack=crash")...)
	requireKilled(t, crashed)
	require.Zero(t, countPublished(t, pool, events), "nothing was marked")
	s, err := js.Stream(context.Background(), stream)
	require.NoError(t, err)
	stored := s.CachedInfo().State.Msgs
	require.Positive(t, stored, "the stream stored an event before the crash (others may have been in flight)")
	require.LessOrEqual(t, stored, uint64(len(events)))

	clean := startStarter(t, url, tq, env...)
	waitPublished(t, pool, events, 60*time.Second)
	clean.terminate(t)
	require.Contains(t, clean.output(), "stream already had the event: duplicate publish absorbed")
	info, err := s.Info(context.Background())
	require.NoError(t, err)
	require.Equal(t, uint64(len(events)), info.State.Msgs, "one message per event")
}

// TestJetStreamSinkEncryptsPersonalData: with OUTFLOW_CODEC_KEYS set, the
// starter encrypts each OrderCreated on its way to the stream with the
// customer's key, as it does the workflow input: the stored message holds
// the customer's email nowhere (body or headers), names its key in the
// headers, and decrypts, with the same keys and the database's customer
// keys, to the payload as enqueued.
func TestJetStreamSinkEncryptsPersonalData(t *testing.T) {
	t.Parallel()
	pool, url := testdb.New(t)
	js, stream, prefix := testStream(t)
	spec := codec.NewKeySpec("k1")
	events := enqueueOrders(t, pool, 3)
	p := startStarter(t, url, "sinks-"+uuid.NewString()[:8], SinksEnv+"=jetstream", NATSStreamEnv+"="+stream, NATSSubjectPrefixEnv+"="+prefix,
		"OUTFLOW_RELAY_POLL=200ms", codec.KeysEnv+"="+spec)
	waitPublished(t, pool, events, 60*time.Second)
	p.terminate(t)
	require.Contains(t, p.output(), `stream_payload_codec="AES-256-GCM, encrypting with k1; decrypting k1"`)

	keys, err := codec.ParseKeys(spec)
	require.NoError(t, err)
	dec := natscodec.New(codec.NewDataConverter(keys, codec.Options{Store: codec.NewPGStore(pool)}))
	s, err := js.Stream(context.Background(), stream)
	require.NoError(t, err)
	for _, e := range events {
		require.Contains(t, string(e.Payload), "ada@example.com", "the event carries the email")
		m, err := s.GetLastMsgForSubject(context.Background(), prefix+".order."+e.AggregateID)
		require.NoError(t, err)
		require.NotContains(t, string(m.Data), "ada@example.com")
		require.NotContains(t, string(m.Data), "SKU-1")
		for name, values := range m.Header {
			require.NotContains(t, strings.Join(values, ","), "ada@example.com", "header %s", name)
		}
		require.Equal(t, codec.EncodingEncrypted, m.Header.Get(natspub.HeaderPayloadEncoding))
		require.True(t, strings.HasPrefix(m.Header.Get(natspub.HeaderPayloadKeyID), codec.CustomerKeyPrefix),
			"the customer's key, so that forget-customer reaches the stream: %q", m.Header.Get(natspub.HeaderPayloadKeyID))
		plain, err := dec.DecodePayload(natspub.EncodedPayload{Data: m.Data,
			Encoding: m.Header.Get(natspub.HeaderPayloadEncoding), KeyID: m.Header.Get(natspub.HeaderPayloadKeyID)})
		require.NoError(t, err)
		require.JSONEq(t, string(e.Payload), string(plain))
	}
}

// TestBothSinksTakeASkipOnlyOnTheStream: with both sinks, an order's event
// 2 has no Temporal route and is quarantined; the operator skips it. The
// starter then publishes its tombstone to the stream, in the order's lane
// between events 1 and 3, and starts no workflow for it: Temporal has the
// workflows of 1 and 3 only.
func TestBothSinksTakeASkipOnlyOnTheStream(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, url := testdb.New(t)
	js, stream, prefix := testStream(t)
	order := uuid.NewString()
	evs := testdb.Enqueue(t, pool, testdb.Event(t, order, "OrderCreated"), testdb.Event(t, order, "OrderNoted"),
		testdb.Event(t, order, "OrderShipped"))
	startStarter(t, url, "sinks-skip-"+uuid.NewString()[:8], SinksEnv+"=temporal,jetstream", NATSStreamEnv+"="+stream,
		NATSSubjectPrefixEnv+"="+prefix, "OUTFLOW_ROUTES=OrderCreated=NoteWorkflow,OrderShipped=NoteWorkflow", "OUTFLOW_RELAY_POLL=200ms")

	require.Eventually(t, func() bool {
		_, err := outboxops.Skip(ctx, pool, evs[1].ID, "no workflow for it; handled by hand", "ops")
		return err == nil
	}, 60*time.Second, 100*time.Millisecond, "event 2 quarantined (no route), then skipped")
	waitPublished(t, pool, []outbox.Event{evs[0], evs[2]}, 60*time.Second)

	for i, e := range evs {
		_, err := temporal.Client().DescribeWorkflow(ctx, e.ID.String(), "")
		if i == 1 {
			require.ErrorAs(t, err, new(*serviceerror.NotFound), "no workflow for the skipped event")
			continue
		}
		require.NoError(t, err, "event %d's workflow", i+1)
	}
	var lane []string
	for _, m := range natstest.Messages(t, js, stream) {
		lane = append(lane, m.Header.Get(natspub.HeaderSequence)+" "+m.Header.Get(natspub.HeaderEventType)+" "+m.Header.Get(natspub.HeaderSkipped))
	}
	require.Equal(t, []string{"1 OrderCreated ", "2 OrderNoted true", "3 OrderShipped "}, lane, "the tombstone in event 2's place")
}
