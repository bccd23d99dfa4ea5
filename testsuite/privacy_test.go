package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
)

// customer is one buyer of the privacy test, with personal data that must
// never appear in a history in plain text: the address, the shipping
// address and the SKU they bought (unique per run, so a hit is theirs).
type customer struct {
	email, name, line1, sku string
}

func newCustomer(first string) customer {
	tag := strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	return customer{
		email: fmt.Sprintf("%s.%s@example.com", first, tag),
		name:  first + " Privacy-" + tag,
		line1: tag + " Confidential Row",
		sku:   "SKU-PII-" + tag,
	}
}

func (c customer) needles() []string { return []string{c.email, c.name, c.line1, c.sku} }

// placeOrder places an order with a shipping address (OrderCreated v2) and
// retries it with its idempotency key until the API answers 201.
func placeOrder(ctx context.Context, s *Stack, c customer, paymentMethod string) (string, error) {
	body, _ := json.Marshal(map[string]any{
		"customer_email": c.email, "currency": "usd", "payment_method": paymentMethod,
		"items":            []map[string]any{{"sku": c.sku, "quantity": 2, "unit_amount": 1250}},
		"shipping_address": map[string]any{"name": c.name, "line1": c.line1, "city": "London", "postal_code": "N1 9GU", "country": "GB"},
	})
	key := "privacy-" + uuid.NewString()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.APIAddr+"/orders", bytes.NewReader(body))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusCreated {
				var out struct {
					OrderID string `json:"order_id"`
				}
				return out.OrderID, json.Unmarshal(b, &out)
			}
			if res.StatusCode >= 400 && res.StatusCode < 500 {
				return "", fmt.Errorf("POST /orders: HTTP %d: %s", res.StatusCode, b)
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// history is one workflow's history as Temporal stores it.
type history struct {
	workflowID string
	events     []*historypb.HistoryEvent
}

// rawHistories fetches the histories of the orders' workflows (one per
// outbox event) with a client that has no codec, once every workflow has
// closed.
func rawHistories(ctx context.Context, t testing.TB, s *Stack, orderIDs ...string) []history {
	t.Helper()
	raw, err := client.Dial(client.Options{HostPort: s.Env.Temporal.Address(), Logger: devserver.QuietLogger()})
	require.NoError(t, err)
	defer raw.Close()
	var out []history
	for _, id := range orderIDs {
		var wids []string
		for _, e := range outboxtest.Events(t, s.Pool, outboxtest.Match{AggregateID: id}) {
			wids = append(wids, e.ID.String())
		}
		require.NotEmpty(t, wids)
		for _, wid := range wids {
			require.Eventually(t, func() bool {
				d, err := raw.DescribeWorkflow(ctx, wid, "")
				return err == nil && d.RawResponse.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
			}, 2*time.Minute, 200*time.Millisecond, "workflow %s closes", wid)
			h := history{workflowID: wid}
			it := raw.GetWorkflowHistory(ctx, wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				require.NoError(t, err)
				h.events = append(h.events, ev)
			}
			out = append(out, h)
		}
	}
	return out
}

// payloadsOf calls fn with every payload of m, anywhere in it, and the path
// of fields that leads there.
func payloadsOf(m protoreflect.Message, path string, fn func(path string, p *commonpb.Payload)) {
	if p, ok := m.Interface().(*commonpb.Payload); ok {
		fn(path, p)
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := path + "." + string(fd.Name())
		switch {
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			for i := 0; i < v.List().Len(); i++ {
				payloadsOf(v.List().Get(i).Message(), name, fn)
			}
		case fd.IsMap() && fd.MapValue().Kind() == protoreflect.MessageKind:
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				payloadsOf(mv.Message(), name+"["+k.String()+"]", fn)
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Kind() == protoreflect.MessageKind:
			payloadsOf(v.Message(), name, fn)
		}
		return true
	})
}

// readable is everything of the histories a reader with dc can read: the
// raw bytes of every event plus every payload dc decodes, as text. errs
// collects the payloads dc refused.
func readable(t *testing.T, hs []history, dc converter.DataConverter) (text string, errs []error) {
	t.Helper()
	var b strings.Builder
	for _, h := range hs {
		for _, ev := range h.events {
			raw, err := proto.Marshal(ev)
			require.NoError(t, err)
			b.Write(raw)
			if dc == nil {
				continue
			}
			payloadsOf(ev.ProtoReflect(), ev.GetEventType().String(), func(path string, p *commonpb.Payload) {
				var v json.RawMessage
				if err := dc.FromPayload(p, &v); err != nil {
					errs = append(errs, fmt.Errorf("%s %s: %w", h.workflowID, path, err))
					return
				}
				b.WriteString("\n")
				b.Write(v)
			})
		}
	}
	return b.String(), errs
}

// TestHistoriesWithoutPersonalData runs orders of two customers through the
// real binaries with the payload codec on, fetches their histories raw from
// the Temporal server (no codec) and finds no email, address or SKU in any
// of them, in any payload, failure or memo; then reads them with the codec
// and finds every one. It forgets one customer with `outboxctl
// forget-customer` and checks that exactly that customer's data is gone
// from every history while the other customer's, and the forgotten
// customer's non-personal payloads, still decode. Last, it rotates the
// master key under the running stack.
func TestHistoriesWithoutPersonalData(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s := NewStack(t)
	for _, name := range []string{"orderapi", "starter", "worker"} {
		s.Start(name, "")
	}
	ada, grace := newCustomer("ada"), newCustomer("grace")
	// Ada: a confirmed order (address printed in the confirmation) and one
	// cancelled after its confirmation (refund, cancellation mail). Grace:
	// a declined card.
	adaPaid, err := placeOrder(ctx, s, ada, "pm_card_visa")
	require.NoError(t, err)
	adaCancelled, err := placeOrder(ctx, s, ada, "pm_card_visa")
	require.NoError(t, err)
	graceDeclined, err := placeOrder(ctx, s, grace, "pm_card_chargeDeclined")
	require.NoError(t, err)
	require.NoError(t, WaitStatus(ctx, s, adaCancelled, "confirmed", 2*time.Minute))
	require.NoError(t, s.API().Cancel(ctx, adaCancelled))
	require.NoError(t, WaitDrained(ctx, s.Pool, 3*time.Minute))

	adaHist := rawHistories(ctx, t, s, adaPaid, adaCancelled)
	graceHist := rawHistories(ctx, t, s, graceDeclined)
	all := append(append([]history{}, adaHist...), graceHist...)
	require.Len(t, all, 4, "two sagas, a cancel and a declined saga")

	// Raw: nothing personal anywhere; every payload but the memo's
	// scalars, the summary and details (and search attributes) is
	// encrypted.
	text, _ := readable(t, all, nil)
	for _, c := range []customer{ada, grace} {
		for _, n := range c.needles() {
			require.NotContains(t, text, n, "personal data in a raw history")
		}
	}
	encrypted, plain := 0, map[string]int{}
	for _, h := range all {
		for _, ev := range h.events {
			payloadsOf(ev.ProtoReflect(), ev.GetEventType().String(), func(path string, p *commonpb.Payload) {
				if string(p.Metadata[converter.MetadataEncoding]) == codec.EncodingEncrypted {
					encrypted++
					return
				}
				kind := path
				switch {
				case strings.Contains(path, ".memo.") || strings.Contains(path, ".upserted_memo."):
					kind = "memo"
				case strings.Contains(path, "search_attributes."):
					kind = "search attributes"
				case strings.Contains(path, ".user_metadata."):
					// The start's summary and details (routes' Describe):
					// strings, plaintext like the memo's, so the UI shows
					// them without a codec server; the check above found
					// nothing personal in them.
					kind = "user metadata"
				}
				plain[kind]++
			})
		}
	}
	for kind := range plain {
		require.Contains(t, []string{"memo", "search attributes", "user metadata"}, kind, "only memo values, search attributes and the summary and details are plaintext (found %v)", plain)
	}
	require.Greater(t, encrypted, 20)
	t.Logf("payloads in 4 histories: %d encrypted, plaintext %v", encrypted, plain)

	// With the codec: every needle of both customers, and nothing refused.
	text, errs := readable(t, all, s.DataConverter())
	require.Empty(t, errs)
	for _, c := range []customer{ada, grace} {
		for _, n := range c.needles() {
			require.Contains(t, text, n, "the codec reads it back")
		}
	}

	// Forget Ada: her personal data is gone from every history, Grace's is
	// not, and Ada's histories keep their other payloads readable.
	out, err := s.Outboxctl(ctx, "forget-customer", strings.ToUpper(ada.email), "--reason", "privacy test: erasure", "--actor", "testsuite", "--yes")
	require.NoError(t, err, out)
	require.Contains(t, out, "forgot customer key")
	text, errs = readable(t, adaHist, s.DataConverter())
	for _, n := range ada.needles() {
		require.NotContains(t, text, n, "forgotten")
	}
	require.NotEmpty(t, errs)
	t.Logf("Ada's histories after the erasure: %d payloads unreadable", len(errs))
	for _, err := range errs {
		require.True(t, errors.Is(err, codec.ErrErased), "only erased payloads fail: %v", err)
	}
	require.Contains(t, text, adaPaid, "Ada's non-personal payloads (charges, projection steps) still decode")
	text, errs = readable(t, graceHist, s.DataConverter())
	require.Empty(t, errs)
	for _, n := range grace.needles() {
		require.Contains(t, text, n)
	}

	// Rotation under the running stack: a new primary key, the old one kept
	// to decrypt. Grace orders again (her key was wrapped by the old master
	// key); the new payloads use the new key; a reader holding only the new
	// key fails on the old histories, naming the old key.
	newKey := codec.NewKeySpec("testsuite-2")
	s.CodecKeys = newKey + "," + TestCodecKeys
	for _, name := range []string{"starter", "worker"} {
		s.Proc(name).Stop(10 * time.Second)
		s.Start(name, "")
	}
	again, err := placeOrder(ctx, s, grace, "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, WaitStatus(ctx, s, again, "confirmed", 2*time.Minute))
	rotated := rawHistories(ctx, t, s, again)
	keyIDs := map[string]int{}
	for _, ev := range rotated[0].events {
		payloadsOf(ev.ProtoReflect(), "", func(_ string, p *commonpb.Payload) {
			if id := string(p.Metadata[codec.MetadataKeyID]); id != "" {
				keyIDs[strings.SplitN(id, "/", 2)[0]]++
			}
		})
	}
	require.Positive(t, keyIDs["testsuite-2"], "the new key encrypts: %v", keyIDs)
	require.Zero(t, keyIDs["testsuite-1"], "the old key no longer encrypts: %v", keyIDs)
	text, errs = readable(t, append(rotated, graceHist...), s.DataConverter())
	require.Empty(t, errs, "both keys decrypt")
	require.Contains(t, text, grace.line1)
	retired := s.CodecKeys
	s.CodecKeys = newKey
	_, errs = readable(t, graceHist, s.DataConverter())
	s.CodecKeys = retired
	require.NotEmpty(t, errs)
	require.ErrorIs(t, errs[0], codec.ErrUnknownKey)
	require.Contains(t, errs[0].Error(), `"testsuite-1"`, "the error names the key id")
}

// TestNewOrderAfterForgetIsReadable places an order of a customer, forgets
// the customer, and places another order of theirs at once, read by a
// worker that never saw the old key: the relay must encrypt it with a new
// key (not the erased one it may still cache), and the order is charged
// and confirmed like any other.
func TestNewOrderAfterForgetIsReadable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, ada, before := confirmedCustomer(ctx, t)
	out, err := forgetCustomer(ctx, s, ada.email, "--reason", "privacy test: order after erasure")
	require.NoError(t, err, out)
	require.Contains(t, out, "forgot customer key")

	restartWorker(s, "") // a worker that never held the erased key (another replica)
	after, err := placeOrder(ctx, s, ada, "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, WaitStatus(ctx, s, after, "confirmed", 90*time.Second),
		"an order placed after the erasure is charged and confirmed")

	// Its history is under a new key of Ada's, readable; the old one is not.
	hs := rawHistories(ctx, t, s, after)
	text, errs := readable(t, hs, s.DataConverter())
	require.Empty(t, errs)
	require.Contains(t, text, ada.line1)
	_, errs = readable(t, rawHistories(ctx, t, s, before), s.DataConverter())
	require.NotEmpty(t, errs, "the order before the erasure stays unreadable")
}

// confirmedCustomer starts a stack (order API, relay, worker) and returns
// it with a new customer and their first order, confirmed: every process
// has used the customer's key.
func confirmedCustomer(ctx context.Context, t *testing.T) (*Stack, customer, string) {
	t.Helper()
	s := NewStack(t)
	for _, name := range []string{"orderapi", "starter", "worker"} {
		s.Start(name, "")
	}
	c := newCustomer("ada")
	order, err := placeOrder(ctx, s, c, "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, WaitStatus(ctx, s, order, "confirmed", 2*time.Minute))
	return s, c, order
}

// restartWorker replaces the stack's worker with a fresh process (an empty
// key cache) with these failpoints.
func restartWorker(s *Stack, failpoints string) {
	s.Proc("worker").Stop(10 * time.Second)
	s.Start("worker", failpoints)
}

// forgetCustomer runs outboxctl forget-customer for email, as the test
// suite.
func forgetCustomer(ctx context.Context, s *Stack, email string, args ...string) (string, error) {
	return s.Outboxctl(ctx, append([]string{"forget-customer", email, "--actor", "testsuite", "--yes"}, args...)...)
}

// workflowOf is the workflow id (= event id) of the order's event of type.
func workflowOf(t *testing.T, s *Stack, orderID, eventType string) string {
	t.Helper()
	return outboxtest.RequireEnqueued(t, s.Pool, outboxtest.Match{AggregateID: orderID, Type: eventType}).ID.String()
}

// waitClosed waits until the workflow is no longer running and returns how
// it closed.
func waitClosed(ctx context.Context, t *testing.T, s *Stack, workflowID string, timeout time.Duration) enumspb.WorkflowExecutionStatus {
	t.Helper()
	c, err := s.Env.Temporal.Client()
	require.NoError(t, err)
	defer c.Close()
	deadline := time.Now().Add(timeout)
	for {
		d, err := c.DescribeWorkflow(ctx, workflowID, "")
		var status enumspb.WorkflowExecutionStatus
		if err == nil {
			status = d.RawResponse.GetWorkflowExecutionInfo().GetStatus()
		}
		if err == nil && status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return status
		}
		if time.Now().After(deadline) {
			t.Fatalf("workflow %s still runs after %s (describe: %v, err %v)", workflowID, timeout, status, err)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestForcedErasureFailsTheWorkflow forgets, with --force, a customer whose
// order no worker has read yet: the workflow can never read its input, and
// fails, naming the erasure, instead of retrying its task forever.
func TestForcedErasureFailsTheWorkflow(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := NewStack(t)
	for _, name := range []string{"orderapi", "starter"} {
		s.Start(name, "")
	}
	ada := newCustomer("ada")
	order, err := placeOrder(ctx, s, ada, "pm_card_visa")
	require.NoError(t, err)
	outboxtest.WaitFor(t, s.Pool, outboxtest.Match{AggregateID: order}, time.Minute, outboxtest.AllPublished,
		"the workflow is started, no worker runs")
	wid := workflowOf(t, s, order, "OrderCreated")
	out, err := forgetCustomer(ctx, s, ada.email, "--reason", "privacy test: forced erasure")
	require.Error(t, err, out)
	require.Contains(t, out, "OrderCreated workflow "+wid+" is running", "without --force it refuses")
	out, err = forgetCustomer(ctx, s, ada.email, "--reason", "privacy test: forced erasure", "--force")
	require.NoError(t, err, out)
	require.Contains(t, out, "forgot customer key")
	require.Contains(t, out, "--force: 1 workflows still needed the key")
	require.Contains(t, out, "OrderCreated workflow "+wid+" is running")

	s.Start("worker", "")
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, waitClosed(ctx, t, s, wid, time.Minute),
		"a workflow whose input was erased fails")
	c, err := client.Dial(client.Options{HostPort: s.Env.Temporal.Address(), Logger: devserver.QuietLogger(),
		DataConverter: s.DataConverter(), FailureConverter: s.DataConverter().FailureConverter()})
	require.NoError(t, err)
	defer c.Close()
	err = c.GetWorkflow(ctx, wid, "").Get(ctx, nil)
	require.ErrorContains(t, err, "customer key erased")
	require.ErrorContains(t, err, "settle the order by hand")
}

// TestForgetWaitsForWorkflowsThatNeedTheKey: an order projected
// payment_failed, and one projected cancelled, still have a workflow that
// reads the customer's data (the last email). forget-customer refuses,
// naming both workflows, and forgets nothing; with --wait it erases once
// they have finished.
func TestForgetWaitsForWorkflowsThatNeedTheKey(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s, ada, paid := confirmedCustomer(ctx, t)
	// From here on every email hangs after the provider took it: the
	// workflows stay in their last step.
	restartWorker(s, "activity.email.after_provider=sleep:10m")
	declined, err := placeOrder(ctx, s, ada, "pm_card_chargeDeclined")
	require.NoError(t, err)
	require.NoError(t, WaitStatus(ctx, s, declined, "payment_failed", 2*time.Minute))
	require.NoError(t, s.API().Cancel(ctx, paid))
	require.NoError(t, WaitStatus(ctx, s, paid, "cancelled", 2*time.Minute))
	saga, cancelWF := workflowOf(t, s, declined, "OrderCreated"), workflowOf(t, s, paid, "OrderCancelled")

	out, err := forgetCustomer(ctx, s, ada.email, "--reason", "privacy test: erasure while sagas run")
	require.Error(t, err, "forget-customer refuses while workflows need the key:\n%s", out)
	require.Contains(t, out, "nothing was forgotten")
	require.Contains(t, out, "OrderCreated workflow "+saga+" is running")
	require.Contains(t, out, "OrderCancelled workflow "+cancelWF+" is running")
	var n int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM customer_keys`).Scan(&n))
	require.Equal(t, 1, n, "the key is still there")

	// The emails go out; --wait erases once both workflows have finished.
	restartWorker(s, "")
	out, err = forgetCustomer(ctx, s, ada.email, "--reason", "privacy test: erasure after the sagas", "--wait", "3m")
	require.NoError(t, err, out)
	require.Contains(t, out, "forgot customer key")
	for _, wid := range []string{saga, cancelWF} {
		require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, waitClosed(ctx, t, s, wid, time.Second))
	}
}
