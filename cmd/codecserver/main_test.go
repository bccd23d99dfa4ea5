package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/devserver"
	"github.com/outflow/outflow/internal/personal"
	"github.com/outflow/outflow/internal/testdb"
	"github.com/outflow/outflow/orders"
)

// TestTemporalCLIDecodesThroughTheCodecServer: a history written with the
// codec, shown by the Temporal CLI. Without --codec-endpoint the CLI sees
// ciphertext only; through the codec server (with its bearer token) it sees
// the email, the address and the SKU; with a wrong token it gets nothing;
// and once the customer is forgotten their input stays encrypted while the
// rest of the history still decodes.
func TestTemporalCLIDecodesThroughTheCodecServer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a Temporal dev server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cli, err := devserver.CLIPath()
	require.NoError(t, err)
	srv := devserver.Start(t, devserver.Options{})
	pool, dbURL := testdb.New(t)
	keySpec := codec.NewKeySpec("test-1")
	keys, err := codec.ParseKeys(keySpec)
	require.NoError(t, err)

	// The workflow is started the way the relay starts it, with the
	// codec; no worker runs, the start event is the history.
	dc := codec.NewDataConverter(keys, codec.Options{Store: codec.NewPGStore(pool), Subject: personal.Subject})
	c, err := client.Dial(client.Options{HostPort: srv.Address(), DataConverter: dc,
		FailureConverter: dc.FailureConverter()})
	require.NoError(t, err)
	defer c.Close()
	orderID := uuid.NewString()
	version, payload := orders.EncodeOrderCreated(orders.OrderCreated{
		OrderID: orderID, CustomerEmail: "ada.codec@example.com", Currency: "usd", PaymentMethod: "pm_card_visa", Amount: 2500,
		Items:           []orders.Item{{SKU: "SKU-CODEC-7", Quantity: 2, UnitAmount: 1250}},
		ShippingAddress: &orders.ShippingAddress{Name: "Ada Lovelace", Line1: "12 Cipher Lane", City: "London", PostalCode: "N1 9GU", Country: "GB"},
	})
	raw, err := json.Marshal(payload)
	require.NoError(t, err)
	wid := uuid.NewString()
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wid, TaskQueue: "codecserver-test-" + wid[:8],
		Memo:                  map[string]any{"aggregate_id": orderID},
		TypedSearchAttributes: temporal.NewSearchAttributes(handoff.OrderIDKey.ValueSet(orderID))},
		handoff.OrderCreatedWorkflowName, handoff.EventInput{EventID: wid, EventType: orders.EventOrderCreated,
			AggregateType: orders.AggregateType, AggregateID: orderID, Sequence: 1, SchemaVersion: version, Payload: raw})
	require.NoError(t, err)
	// A signal carries no personal data: it is under the master key.
	require.NoError(t, c.SignalWorkflow(ctx, wid, "", handoff.SignalCancel, handoff.CancelRequest{CancelEventID: "cancel-event-77"}))

	env := map[string]string{
		AddrEnv: "127.0.0.1:0", TokenEnv: "t0ken", CORSOriginEnv: "http://127.0.0.1:8233",
		codec.KeysEnv: keySpec, "DATABASE_URL": dbURL,
	}
	sctx, stop := context.WithCancel(ctx)
	ready := make(chan string, 1)
	done := make(chan error, 1)
	logs := &syncBuffer{}
	go func() { done <- run(sctx, func(k string) string { return env[k] }, logs, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("codec server: %v", err)
	}
	t.Cleanup(func() { stop(); require.NoError(t, <-done) })

	show := func(extra ...string) (string, error) {
		args := append([]string{"workflow", "show", "--workflow-id", wid, "--address", srv.Address(), "--namespace", "default", "-o", "json"}, extra...)
		cmd := exec.CommandContext(ctx, cli, args...)
		cmd.Env = append(os.Environ(), "TEMPORAL_CONFIG_FILE=/nonexistent")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return readable(out.String()), err
	}
	secrets := []string{"ada.codec@example.com", "12 Cipher Lane", "SKU-CODEC-7", "cancel-event-77"}

	plain, err := show()
	require.NoError(t, err, plain)
	require.Contains(t, plain, b64(codec.EncodingEncrypted), "without the codec the CLI shows ciphertext")
	require.Contains(t, plain, b64(`"`+orderID+`"`), "search attributes and memo stay plaintext JSON")
	for _, s := range secrets {
		require.NotContains(t, plain, s)
	}

	decoded, err := show("--codec-endpoint", "http://"+addr, "--codec-auth", "Bearer t0ken")
	require.NoError(t, err, decoded)
	for _, s := range secrets {
		require.Contains(t, decoded, s, "decoded through the codec server")
	}
	require.NotContains(t, decoded, b64(codec.EncodingEncrypted))

	denied, err := show("--codec-endpoint", "http://"+addr, "--codec-auth", "Bearer wrong", "--command-timeout", "3s")
	require.Error(t, err, "a wrong token gets nothing decoded: %s", denied)
	require.Contains(t, logs.String(), "status=401", "the server refused it")
	for _, s := range secrets {
		require.NotContains(t, denied, s)
	}

	_, err = codec.Forget(ctx, pool, "ada.codec@example.com", "test", "erasure through the codec server")
	require.NoError(t, err)
	// The running server may hold the key for codec.CacheTTL; a restarted
	// one (here: a second server) must not decode the forgotten input.
	env2 := map[string]string{AddrEnv: "127.0.0.1:0", codec.KeysEnv: keySpec, "DATABASE_URL": dbURL}
	ready2, done2 := make(chan string, 1), make(chan error, 1)
	s2ctx, stop2 := context.WithCancel(ctx)
	go func() { done2 <- run(s2ctx, func(k string) string { return env2[k] }, io.Discard, ready2) }()
	addr2 := <-ready2
	defer func() { stop2(); <-done2 }()
	after, err := show("--codec-endpoint", "http://"+addr2)
	require.NoError(t, err, after)
	for _, s := range secrets[:3] {
		require.NotContains(t, after, s, "forgotten")
	}
	require.Contains(t, after, "cancel-event-77", "the rest of the history still decodes")
	require.True(t, strings.Contains(after, b64(codec.EncodingEncrypted)), "the forgotten input is shown as ciphertext")
}

// readable is the CLI's JSON output with every base64 payload "data" it
// holds decoded beside it, so a test can search what an operator would read.
func readable(out string) string {
	var b strings.Builder
	b.WriteString(out)
	for _, m := range dataField.FindAllStringSubmatch(out, -1) {
		if raw, err := base64.StdEncoding.DecodeString(m[1]); err == nil {
			b.WriteString("\n")
			b.Write(raw)
		}
	}
	return b.String()
}

var dataField = regexp.MustCompile(`"data":\s*"([A-Za-z0-9+/=]+)"`)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// b64 is how the CLI's JSON shows raw payload bytes and metadata.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
