package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/personal"
	"github.com/outflow/outflow/internal/routes"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testlog"
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
		TypedSearchAttributes: temporal.NewSearchAttributes(routes.OrderIDKey.ValueSet(orderID))},
		handoff.OrderCreatedWorkflowName, handoff.EventInput{EventID: wid, EventType: orders.EventOrderCreated,
			AggregateType: orders.AggregateType, AggregateID: orderID, Sequence: 1, SchemaVersion: version, Payload: raw})
	require.NoError(t, err)
	// A signal carries no personal data: it is under the master key.
	require.NoError(t, c.SignalWorkflow(ctx, wid, "", handoff.SignalCancel, handoff.CancelRequest{CancelEventID: "cancel-event-77"}))

	env := map[string]string{
		AddrEnv: "127.0.0.1:0", TokenEnv: "t0ken", CORSOriginEnv: "http://127.0.0.1:8233",
		codec.KeysEnv: keySpec, "DATABASE_URL": dbURL,
	}
	logs := &testlog.SyncBuffer{}
	addr := startServer(ctx, t, env, logs)

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

// startServer runs the codec server with env until t ends and returns its
// address.
func startServer(ctx context.Context, t *testing.T, env map[string]string, logOut io.Writer) string {
	t.Helper()
	sctx, stop := context.WithCancel(ctx)
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- run(sctx, func(k string) string { return env[k] }, logOut, ready) }()
	select {
	case addr := <-ready:
		t.Cleanup(func() { stop(); require.NoError(t, <-done) })
		return addr
	case err := <-done:
		stop()
		t.Fatalf("codec server: %v", err)
		return ""
	}
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

// b64 is how the CLI's JSON shows raw payload bytes and metadata.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestCodecServerAnswersOnlyItsOwnHostAndJSON: with no token (the demo's
// and compose's default) the codec server must not decode for a web page
// the operator happens to visit. A DNS-rebinding page reaches the loopback
// address under its own name, so the Host header is foreign: refused. A
// cross-origin page can send a text/plain POST without a preflight:
// refused. The Web UI's request (application/json, X-Namespace, from the
// configured origin) and the CLI's (the SDK's remote codec) still decode.
func TestCodecServerAnswersOnlyItsOwnHostAndJSON(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, dbURL := testdb.New(t)
	keySpec := codec.NewKeySpec("test-1")
	ps := encodeOrderInput(t, pool, keySpec, "rebind.victim@example.com")
	body, err := protojson.Marshal(ps)
	require.NoError(t, err)

	const uiOrigin = "http://127.0.0.1:8233"
	env := map[string]string{AddrEnv: "127.0.0.1:0", CORSOriginEnv: uiOrigin, codec.KeysEnv: keySpec, "DATABASE_URL": dbURL}
	addr := startServer(ctx, t, env, io.Discard)
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)

	post := func(host, contentType, origin string) (int, string, http.Header) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/decode", bytes.NewReader(body))
		require.NoError(t, err)
		req.Host = host
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		req.Header.Set("X-Namespace", "default")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, readable(string(b)), res.Header
	}

	// The Web UI's request, as its data encoder sends it (Content-Type
	// application/json and X-Namespace, from the UI's origin).
	code, out, h := post(addr, "application/json", uiOrigin)
	require.Equal(t, http.StatusOK, code, out)
	require.Contains(t, out, "rebind.victim@example.com")
	require.Equal(t, uiOrigin, h.Get("Access-Control-Allow-Origin"))
	code, out, _ = post("localhost:"+port, "application/json", "")
	require.Equal(t, http.StatusOK, code, "localhost is the loopback address too: %s", out)

	// A page that rebound its own name to 127.0.0.1.
	rebound := "rebind.example:" + port
	code, out, _ = post(rebound, "application/json", "http://"+rebound)
	require.Equal(t, http.StatusForbidden, code, "a foreign Host must be refused, got: %s", out)
	require.Contains(t, out, "CODECSERVER_ALLOWED_HOSTS", "the refusal names the setting")
	require.NotContains(t, out, "rebind.victim@example.com")
	code, out, _ = post(rebound, "text/plain", "")
	require.Equal(t, http.StatusForbidden, code, out)

	// A simple (preflight-free) request from any page.
	for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""} {
		code, out, _ = post(addr, ct, "")
		require.Equal(t, http.StatusUnsupportedMediaType, code, "Content-Type %q must be refused, got: %s", ct, out)
		require.NotContains(t, out, "rebind.victim@example.com")
		require.Contains(t, out, "application/json")
	}
	// JSON from another page's origin (its preflight got no CORS answer;
	// a browser would not send it, anything else is not a browser's page).
	code, out, _ = post(addr, "application/json", "http://evil.example")
	require.Equal(t, http.StatusForbidden, code, out)
	require.Contains(t, out, "CODECSERVER_CORS_ORIGIN")

	// The CLI's request: the SDK's remote codec.
	decoded, err := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{Endpoint: "http://" + addr}).Decode(ps.Payloads)
	require.NoError(t, err)
	var in handoff.EventInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(&commonpb.Payloads{Payloads: decoded}, &in))
	require.Contains(t, string(in.Payload), "rebind.victim@example.com")
}

// A codec server whose master keys cannot unwrap the database's customer
// keys would fail every customer's payload: it refuses to start instead.
func TestCodecServerRefusesKeysThatCannotReadTheDatabase(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, dbURL := testdb.New(t)
	encodeOrderInput(t, pool, codec.NewKeySpec("earlier-1"), "ada@example.com")

	env := map[string]string{AddrEnv: "127.0.0.1:0", codec.KeysEnv: codec.NewKeySpec("later-1"), "DATABASE_URL": dbURL}
	err := run(ctx, func(k string) string { return env[k] }, io.Discard, nil)
	require.ErrorIs(t, err, codec.ErrKeysMismatch)
	require.ErrorContains(t, err, "earlier-1")
}

// encodeOrderInput encodes an OrderCreated workflow input of email as the
// relay does, with the master keys of keySpec and pool's customer keys
// (making the customer's key on first use).
func encodeOrderInput(t *testing.T, pool *pgxpool.Pool, keySpec, email string) *commonpb.Payloads {
	t.Helper()
	keys, err := codec.ParseKeys(keySpec)
	require.NoError(t, err)
	dc := codec.NewDataConverter(keys, codec.Options{Store: codec.NewPGStore(pool), Subject: personal.Subject})
	version, payload := orders.EncodeOrderCreated(orders.OrderCreated{
		OrderID: uuid.NewString(), CustomerEmail: email, Currency: "usd", PaymentMethod: "pm_card_visa", Amount: 2500,
		Items: []orders.Item{{SKU: "SKU-1", Quantity: 2, UnitAmount: 1250}},
	})
	raw, err := json.Marshal(payload)
	require.NoError(t, err)
	ps, err := dc.ToPayloads(handoff.EventInput{EventID: uuid.NewString(), EventType: orders.EventOrderCreated,
		AggregateType: orders.AggregateType, AggregateID: "o", Sequence: 1, SchemaVersion: version, Payload: raw})
	require.NoError(t, err)
	return ps
}
