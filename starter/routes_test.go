package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/relaycmd"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// TestParseRoutes: the two fixed forms, the optional search attribute, and
// spaces around entries.
func TestParseRoutes(t *testing.T) {
	t.Parallel()
	r, err := relaycmd.ParseRoutes(" InvoiceIssued=InvoiceWorkflow@billing[InvoiceId=invoice_id] , InvoiceVoided=VoidInvoiceWorkflow,InvoicePaid=PaidWorkflow[InvoiceId=number]")
	require.NoError(t, err)
	require.Len(t, r, 3)

	issued := r["InvoiceIssued"]
	require.Equal(t, "InvoiceWorkflow", issued.Workflow)
	require.Equal(t, "billing", issued.TaskQueue)
	require.NotNil(t, issued.SearchAttributes)
	e := outbox.Event{Type: "InvoiceIssued", Payload: []byte(`{"invoice_id": "INV-7", "amount": 100}`)}
	require.NoError(t, issued.Validate(1, e.Payload))
	attrs := issued.SearchAttributes(e)
	require.Equal(t, 1, attrs.Size())
	require.Equal(t, map[string]any{"InvoiceId": "INV-7"}, untyped(attrs))

	voided := r["InvoiceVoided"]
	require.Equal(t, "VoidInvoiceWorkflow", voided.Workflow)
	require.Empty(t, voided.TaskQueue, "OUTFLOW_TASK_QUEUE's")
	require.Nil(t, voided.SearchAttributes, "no search attribute unless the route asks for one")
	require.Nil(t, voided.Validate)

	paid := r["InvoicePaid"]
	require.Empty(t, paid.TaskQueue, "OUTFLOW_TASK_QUEUE's")
	number := outbox.Event{Payload: []byte(`{"number": 4711}`)}
	require.NoError(t, paid.Validate(1, number.Payload))
	require.Equal(t, map[string]any{"InvoiceId": "4711"}, untyped(paid.SearchAttributes(number)), "a number as written")
}

// TestParseRoutesPayloadField: an event whose payload lacks the field, or
// holds something else than a string or number there, fails validation
// (the relay quarantines it at once), with a message that says what sets
// the attribute.
func TestParseRoutesPayloadField(t *testing.T) {
	t.Parallel()
	r, err := relaycmd.ParseRoutes("InvoiceIssued=InvoiceWorkflow[InvoiceId=invoice_id]")
	require.NoError(t, err)
	validate := r["InvoiceIssued"].Validate
	for payload, want := range map[string]string{
		`{"amount": 1}`:               `the payload has no field "invoice_id", only ["amount"]`,
		`{"invoice_id": {"n": 1}}`:    `field "invoice_id" is {"n": 1}, not a string or a number`,
		`{"invoice_id": null}`:        `field "invoice_id" is null`,
		`{"invoice_id": ["a"]}`:       `not a string or a number`,
		`["invoice_id"]`:              `not a JSON object`,
		`null`:                        `not a JSON object`,
		`{"invoice_id": true, "x":1}`: `is true`,
	} {
		err := validate(1, []byte(payload))
		require.ErrorContains(t, err, want, payload)
		require.ErrorContains(t, err, "OUTFLOW_ROUTES sets search attribute InvoiceId from it", payload)
	}
	require.NoError(t, validate(1, []byte(`{"invoice_id": ""}`)), "an empty string is a value")
}

// TestParseRoutesReportsEveryProblem: each malformed entry is named with
// what to write instead, all at once, and the syntax closes the message.
func TestParseRoutesReportsEveryProblem(t *testing.T) {
	t.Parallel()
	for spec, wants := range map[string][]string{
		"InvoiceIssued":             {`entry 1 "InvoiceIssued": no workflow type: write InvoiceIssued=WORKFLOW_TYPE`},
		"A=B,,C=D,":                 {`entry 2 "": is empty: remove the extra comma`, `entry 4 "": is empty`},
		"=InvoiceWorkflow":          {`no event type before "=": write EVENT_TYPE=InvoiceWorkflow`},
		"A=":                        {`entry 1 "A=": no workflow type after "=": write A=WORKFLOW_TYPE`},
		"A=B@":                      {`"@" names no task queue: write A=B@TASK_QUEUE, or A=B for OUTFLOW_TASK_QUEUE`},
		"A=B@q@r":                   {`the task queue "q@r" contains "@" or "="`},
		"A=B=C":                     {`the workflow type "B=C" contains "="`},
		"A=B[Id]":                   {`[Id] is not one SEARCH_ATTRIBUTE=PAYLOAD_FIELD: write e.g. [InvoiceId=invoice_id]`},
		"A=B[=id]":                  {`[=id] is not one SEARCH_ATTRIBUTE=PAYLOAD_FIELD`},
		"A=B[Id=]":                  {`[Id=] is not one`},
		"A=B[Id=id":                 {`"[Id=id" does not end the entry with "]"`},
		"A=B[Id=id]@q":              {`does not end the entry with "]"`},
		"A=B]":                      {`a "]" without its "["`},
		"A@q=B":                     {`the event type "A@q" contains "@"`},
		"A=B,A=C":                   {`entry 2 "A=C": routes event type A a second time (OUTFLOW_ROUTES entry 1 routes it already): keep one of them`},
		"A=Some Workflow":           {`names may not contain spaces`},
		"InvoiceIssued,=X,A=B@,C=D": {`entry 1 "InvoiceIssued"`, `entry 2 "=X"`, `entry 3 "A=B@"`},
	} {
		r, err := relaycmd.ParseRoutes(spec)
		require.Error(t, err, spec)
		require.Nil(t, r)
		for _, want := range wants {
			require.ErrorContains(t, err, want, spec)
		}
		require.True(t, strings.HasSuffix(err.Error(), relaycmd.RoutesSyntax), "%s: ends with the syntax: %v", spec, err)
	}
}

// TestParseRoutesFile: a routes file takes the entries of OUTFLOW_ROUTES
// one per line (commas too), with comments and blank lines; its errors name
// the file and line, and a file without a route is refused rather than
// taken for the order app's routes.
func TestParseRoutesFile(t *testing.T) {
	t.Parallel()
	r, err := relaycmd.ParseRoutesFile("routes.txt", `# billing's routes
InvoiceIssued=InvoiceWorkflow@billing[InvoiceId=invoice_id]   # the search attribute from the payload

InvoiceVoided=VoidInvoiceWorkflow, InvoicePaid=PaidWorkflow
`)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"InvoiceIssued", "InvoiceVoided", "InvoicePaid"}, keys(r))
	require.Equal(t, "billing", r["InvoiceIssued"].TaskQueue)
	require.NotNil(t, r["InvoiceIssued"].SearchAttributes)
	require.Equal(t, "PaidWorkflow", r["InvoicePaid"].Workflow)

	_, err = relaycmd.ParseRoutesFile("routes.txt", "A=B\n\n# comment\nC=D@\nA=E\n")
	require.ErrorContains(t, err, `OUTFLOW_ROUTES_FILE routes.txt line 4 "C=D@": "@" names no task queue`)
	require.ErrorContains(t, err, `OUTFLOW_ROUTES_FILE routes.txt line 5 "A=E": routes event type A a second time (OUTFLOW_ROUTES_FILE routes.txt line 1 routes it already)`)
	require.True(t, strings.HasSuffix(err.Error(), relaycmd.RoutesSyntax))

	_, err = relaycmd.ParseRoutesFile("empty.txt", "# nothing yet\n\n")
	require.ErrorContains(t, err, "OUTFLOW_ROUTES_FILE empty.txt holds no route")
}

// TestRoutesFromEnv: unset, the order app's routes (OrderId on every
// start); set, only its routes; malformed, recorded with the other
// settings' problems, which main reports together.
func TestRoutesFromEnv(t *testing.T) {
	t.Parallel()
	// routesFromEnv reads the settings as main does, with the order app's defaults.
	routesFromEnv := func(m map[string]string) (temporalpub.Routes, string, error) {
		c, err := relaycmd.ReadConfig(getenv(m), orderApp)
		return c.Routes, c.RoutesFrom, err
	}
	r, from, err := routesFromEnv(nil)
	require.NoError(t, err)
	require.Contains(t, from, "order app")
	require.ElementsMatch(t, []string{orders.EventOrderCreated, orders.EventOrderCancelled, orders.EventPaymentWebhookReceived}, keys(r))
	webhook := r[orders.EventPaymentWebhookReceived]
	require.Equal(t, handoff.SignalPaymentWebhook, webhook.Signal, "a webhook signals the order's saga")
	require.Empty(t, webhook.Workflow, "and never starts it: a saga run from a webhook would have no order")
	require.Equal(t, handoff.PaymentWebhookLateWorkflowName, webhook.ClosedWorkflow)
	require.Equal(t, "saga-1", webhook.WorkflowID(outbox.Event{SchemaVersion: orders.PaymentWebhookReceivedVersion,
		Payload: []byte(`{"stripe_event_id":"evt_1","type":"payment_intent.succeeded","order_id":"o-1","saga_workflow_id":"saga-1"}`)}))
	require.Error(t, webhook.Validate(orders.PaymentWebhookReceivedVersion, []byte(`{"stripe_event_id":"evt_1"}`)),
		"a webhook event that names no saga is the event's own fault")
	created := r[orders.EventOrderCreated]
	require.Equal(t, map[string]any{handoff.SearchAttributeOrderID: "o-1"}, untyped(created.SearchAttributes(outbox.Event{AggregateID: "o-1"})))

	r, from, err = routesFromEnv(map[string]string{relaycmd.RoutesEnv: "InvoiceIssued=InvoiceWorkflow"})
	require.NoError(t, err)
	require.Equal(t, "OUTFLOW_ROUTES=InvoiceIssued=InvoiceWorkflow", from)
	require.Equal(t, []string{"InvoiceIssued"}, keys(r), "only the routes of OUTFLOW_ROUTES")

	_, _, err = routesFromEnv(map[string]string{relaycmd.RoutesEnv: "InvoiceIssued,A=B@", "OUTFLOW_RELAY_BATCH": "many"})
	require.ErrorContains(t, err, `OUTFLOW_RELAY_BATCH="many"`)
	require.ErrorContains(t, err, `entry 1 "InvoiceIssued"`)
	require.ErrorContains(t, err, `entry 2 "A=B@"`)

	file := filepath.Join(t.TempDir(), "routes")
	require.NoError(t, os.WriteFile(file, []byte("InvoiceIssued=InvoiceWorkflow@billing\n"), 0o600))
	r, from, err = routesFromEnv(map[string]string{relaycmd.RoutesFileEnv: file})
	require.NoError(t, err)
	require.Equal(t, "OUTFLOW_ROUTES_FILE="+file, from)
	require.Equal(t, []string{"InvoiceIssued"}, keys(r), "only the file's routes")

	_, _, err = routesFromEnv(map[string]string{relaycmd.RoutesFileEnv: file, relaycmd.RoutesEnv: "A=B"})
	require.ErrorContains(t, err, "OUTFLOW_ROUTES and OUTFLOW_ROUTES_FILE are both set: set one")

	_, _, err = routesFromEnv(map[string]string{relaycmd.RoutesFileEnv: filepath.Join(t.TempDir(), "missing")})
	require.ErrorContains(t, err, "OUTFLOW_ROUTES_FILE: open ")
}

// TestRoutesFromTheEnvironmentOnATeamsNamespace: the starter binary with
// OUTFLOW_ROUTES on a namespace without OrderId that registered a search
// attribute of its own. It starts the routed events only: one with the
// attribute from its payload on OUTFLOW_TASK_QUEUE, one without any on its
// route's task queue; an order event (no route here) and an event whose
// payload lacks the attribute's field are quarantined.
func TestRoutesFromTheEnvironmentOnATeamsNamespace(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := "billing-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	require.NoError(t, temporal.RegisterNamespace(ctx, ns, 48*time.Hour))
	c, err := client.Dial(temporal.ClientOptions(ns))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: ns, SearchAttributes: map[string]enumspb.IndexedValueType{"InvoiceNo": enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	})
	require.NoError(t, err)

	pool, url := testdb.New(t)
	tq, voids := "billing-"+uuid.NewString()[:8], "voids-"+uuid.NewString()[:8]
	event := func(id, typ string, payload any) outbox.Event {
		e, err := outbox.NewEvent("invoice", id, typ, 1, payload)
		require.NoError(t, err)
		return e
	}
	routed := testdb.Enqueue(t, pool,
		event("inv-1", "InvoiceIssued", map[string]string{"invoice_no": "INV-0001"}),
		event("inv-1", "InvoiceVoided", map[string]string{"reason": "typo"}))
	missing := testdb.Enqueue(t, pool, event("inv-2", "InvoiceIssued", map[string]string{"number": "INV-0002"}))[0]
	order := enqueueOrders(t, pool, 1)[0]

	p := startStarter(t, url, tq, "TEMPORAL_NAMESPACE="+ns, "OUTFLOW_RELAY_POLL=200ms",
		relaycmd.RoutesEnv+"=InvoiceIssued=InvoiceWorkflow[InvoiceNo=invoice_no],InvoiceVoided=VoidInvoiceWorkflow@"+voids)
	require.Eventually(t, func() bool { return countPublished(t, pool, routed) == len(routed) }, 60*time.Second, 50*time.Millisecond)
	var quarantined map[uuid.UUID]outboxops.EventInfo
	require.Eventually(t, func() bool {
		list, err := outboxops.List(ctx, pool, outboxops.ListOptions{Quarantined: true})
		quarantined = map[uuid.UUID]outboxops.EventInfo{}
		for _, e := range list {
			quarantined[e.ID] = e
		}
		return err == nil && len(quarantined) == 2
	}, 30*time.Second, 50*time.Millisecond, "the unrouted order event and the invoice without its field are quarantined")
	require.Contains(t, quarantined, missing.ID)
	require.Contains(t, quarantined, order.ID)
	require.Contains(t, quarantined[missing.ID].LastError, `no field "invoice_no"`)
	require.Contains(t, quarantined[order.ID].LastError, `event type "OrderCreated"`)
	p.waitLog(t, "routes="+`"`+relaycmd.RoutesEnv)
	p.terminate(t)

	dc := converter.GetDefaultDataConverter()
	issued, err := c.DescribeWorkflow(ctx, routed[0].ID.String(), "")
	require.NoError(t, err)
	info := issued.RawResponse.GetWorkflowExecutionInfo()
	require.Equal(t, "InvoiceWorkflow", info.GetType().GetName())
	require.Equal(t, tq, info.GetTaskQueue(), "OUTFLOW_TASK_QUEUE")
	var invoiceNo string
	require.NoError(t, dc.FromPayload(info.GetSearchAttributes().GetIndexedFields()["InvoiceNo"], &invoiceNo))
	require.Equal(t, "INV-0001", invoiceNo)

	voided, err := c.DescribeWorkflow(ctx, routed[1].ID.String(), "")
	require.NoError(t, err)
	info = voided.RawResponse.GetWorkflowExecutionInfo()
	require.Equal(t, "VoidInvoiceWorkflow", info.GetType().GetName())
	require.Equal(t, voids, info.GetTaskQueue())
	require.NotContains(t, info.GetSearchAttributes().GetIndexedFields(), "InvoiceNo")
	require.NotContains(t, info.GetSearchAttributes().GetIndexedFields(), handoff.SearchAttributeOrderID)
}

// TestMalformedRoutesStopTheStarter: every problem of OUTFLOW_ROUTES, and
// of the other settings, in one start-up error: plain lines, exit status 2.
func TestMalformedRoutesStopTheStarter(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	p := startStarter(t, url, "unused", relaycmd.RoutesEnv+"=InvoiceIssued,A=B@", "OUTFLOW_RELAY_BATCH=many")
	err := p.wait(t, 30*time.Second)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 2, exit.ExitCode())
	out := p.output()
	require.Contains(t, out, "starter: "+relaycmd.RoutesEnv+` entry 1 "InvoiceIssued": no workflow type`)
	require.Contains(t, out, "starter: "+relaycmd.RoutesEnv+` entry 2 "A=B@": "@" names no task queue`)
	require.Contains(t, out, "OUTFLOW_RELAY_BATCH")
	require.NotContains(t, out, "relay started")
}

// untyped is a set of search attributes as name → value.
func untyped(sa sdktemporal.SearchAttributes) map[string]any {
	out := map[string]any{}
	for k, v := range sa.GetUntypedValues() {
		out[k.GetName()] = v
	}
	return out
}

func keys(r temporalpub.Routes) []string {
	out := make([]string, 0, len(r))
	for k := range r {
		out = append(out, k)
	}
	return out
}

// getenv reads the variables of m.
func getenv(m map[string]string) func(string) string {
	return func(name string) string { return m[name] }
}
