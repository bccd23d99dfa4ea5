// Package natstest connects the repository's tests to a NATS server with
// JetStream (NATS_URL, or the one on this machine's default port) and gives
// each test a stream name and subject prefix no other test uses.
package natstest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// URL is the JetStream server the tests use: $NATS_URL, or nats.DefaultURL.
func URL() string {
	if u := os.Getenv("NATS_URL"); u != "" {
		return u
	}
	return nats.DefaultURL
}

// Connect dials [URL] as the client name; the connection closes when t
// ends.
func Connect(t testing.TB, name string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(URL(), nats.Name(name))
	if err != nil {
		t.Fatalf("natstest: the tests need NATS with JetStream at %s (NATS_URL): %v", URL(), err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	return nc, js
}

// Names returns a stream name (kind in capitals, then an id) and a subject
// prefix (kind in lower case, then the id) no other test uses. The stream,
// once the test created it, is deleted when t ends, on a connection of its
// own: a test may close the one it publishes on.
func Names(t testing.TB, kind string) (stream, prefix string) {
	t.Helper()
	id := strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	stream, prefix = strings.ToUpper(kind)+"_"+strings.ToUpper(id), strings.ToLower(kind)+id
	admin, err := nats.Connect(URL(), nats.Name("natstest-cleanup"))
	if err != nil {
		t.Fatalf("natstest: the tests need NATS with JetStream at %s (NATS_URL): %v", URL(), err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		js, err := jetstream.New(admin)
		if err != nil {
			t.Errorf("natstest: %v", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := js.DeleteStream(ctx, stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("natstest: delete stream %s: %v", stream, err)
		}
	})
	return stream, prefix
}

// Messages reads every message of the stream, in stream order.
func Messages(t testing.TB, js jetstream.JetStream, stream string) []jetstream.RawStreamMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("natstest: stream %s: %v", stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("natstest: stream %s: %v", stream, err)
	}
	var out []jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("natstest: message %d of stream %s: %v", seq, stream, err)
		}
		out = append(out, *m)
	}
	return out
}
