package workflows

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/personal"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
)

// The encrypted histories (testdata/encrypted/*.json) were recorded with
// this master key and the customer keys in testdata/encrypted/customer_keys.json
// by TestRecordEncryptedHistories. Test data only: never a production key.
const replayCodecKeys = "replay-1:cmVwbGF5LXRlc3Qta2V5LW5vdC1hLXNlY3JldC0xMjM="

var encryptedDir = filepath.Join("testdata", "encrypted")

// replayConverters are the codec of the recorded histories: the master key
// and the customer keys they were written with.
func replayConverters(t *testing.T, spec string) (converter.DataConverter, converter.FailureConverter) {
	t.Helper()
	keys, err := codec.ParseKeys(spec)
	require.NoError(t, err)
	var recs []codec.KeyRecord
	if b, err := os.ReadFile(filepath.Join(encryptedDir, "customer_keys.json")); err == nil {
		require.NoError(t, json.Unmarshal(b, &recs))
	}
	dc := codec.NewDataConverter(keys, codec.Options{Store: codec.NewMemoryStore(recs...), Subject: personal.Subject})
	return dc, dc.FailureConverter()
}

func replayWith(t *testing.T, dc converter.DataConverter, fc converter.FailureConverter, file string) error {
	replayer, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: dc, FailureConverter: fc})
	require.NoError(t, err)
	Register(replayer)
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelError})))
	return replayer.ReplayWorkflowHistoryFromJSONFile(logger, file)
}

// TestReplayEncryptedHistories: histories written with the payload codec
// (encrypted inputs, results, markers and failures, the customer's data
// under the customer's key) replay against today's code through the same
// codec, version markers included; without the key they fail, naming it.
// And the plaintext histories recorded before the codec replay through it
// unchanged (it passes through what it did not encode).
func TestReplayEncryptedHistories(t *testing.T) {
	t.Parallel()
	dc, fc := replayConverters(t, replayCodecKeys)
	files, err := filepath.Glob(filepath.Join(encryptedDir, "*.json"))
	require.NoError(t, err)
	var histories []string
	for _, f := range files {
		if filepath.Base(f) != "customer_keys.json" {
			histories = append(histories, f)
		}
	}
	require.NotEmpty(t, histories, "no encrypted histories: run OUTFLOW_RECORD_HISTORIES=1 go test -run TestRecordEncryptedHistories ./workflows/")
	for _, file := range histories {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(file)
			require.NoError(t, err)
			for _, secret := range []string{testEmail, "SKU-1", testAddress.Line1} {
				require.NotContains(t, string(raw), secret, "the recorded history is encrypted")
			}
			require.NoError(t, replayWith(t, dc, fc, file))

			other, ofc := replayConverters(t, codec.NewKeySpec("other"))
			err = replayWith(t, other, ofc, file)
			require.Error(t, err, "without the key the history does not replay")
		})
	}
	plain, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, plain)
	for _, file := range plain {
		t.Run("plaintext/"+filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			require.NoError(t, replayWith(t, dc, fc, file))
		})
	}
}

// TestRecordEncryptedHistories records testdata/encrypted/ with the codec on
// a real dev server (OUTFLOW_RECORD_HISTORIES=1; =overwrite replaces
// existing files): a v2 order confirmed (the versioned shipping-address
// path) and the same kind of order cancelled after its confirmation.
func TestRecordEncryptedHistories(t *testing.T) {
	mode := os.Getenv(recordEnv)
	if mode == "" {
		t.Skip("records testdata/encrypted/ only with " + recordEnv + " set")
	}
	keys, err := codec.ParseKeys(replayCodecKeys)
	require.NoError(t, err)
	store := codec.NewMemoryStore()
	dc := codec.NewDataConverter(keys, codec.Options{Store: store, Subject: personal.Subject})
	fc := dc.FailureConverter()

	srv := devserver.Start(t, devserver.Options{})
	c, err := client.Dial(client.Options{HostPort: srv.Address(), DataConverter: dc, FailureConverter: fc})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	s := startStackOn(t, c, "saga-codec-test")

	newInput := func(o order) handoff.EventInput {
		in := o.createdInput(t, "pm_card_visa")
		in.SchemaVersion, in.Payload = orders.OrderCreatedV2, v2Payload(t, in.Payload)
		return in
	}
	confirmed := s.newOrder(t)
	var res handoff.SagaResult
	require.NoError(t, s.start(t, handoff.OrderCreatedWorkflowName, newInput(confirmed)).Get(ctxFor(t), &res))
	require.Equal(t, handoff.SagaConfirmed, res.Outcome)

	late := s.newOrder(t)
	require.NoError(t, s.start(t, handoff.OrderCreatedWorkflowName, newInput(late)).Get(ctxFor(t), &res))
	var cres CancelResult
	require.NoError(t, s.start(t, handoff.OrderCancelledWorkflowName, late.cancelledInput(t)).Get(ctxFor(t), &cres))
	require.True(t, cres.Refunded)

	require.NoError(t, os.MkdirAll(encryptedDir, 0o755))
	for file, wid := range map[string]string{
		"order_created_v2_confirmed.json":      confirmed.created,
		"order_cancelled_after_confirmed.json": late.cancelled,
	} {
		s.record(t, wid, filepath.Join("encrypted", file))
	}
	keysFile := filepath.Join(encryptedDir, "customer_keys.json")
	if _, err := os.Stat(keysFile); err != nil || mode == "overwrite" {
		b, err := json.MarshalIndent(store.Records(), "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(keysFile, b, 0o644))
	}
}
