package relaycmd_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/relaycmd"
)

// syncBuffer is a stderr the relay's goroutines write while the test reads.
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

func process(vars map[string]string) (relaycmd.Process, *syncBuffer, *syncBuffer) {
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	return relaycmd.Process{Stdout: stdout, Stderr: stderr, Getenv: func(k string) string { return vars[k] }}, stdout, stderr
}

// TestHelpAndVersion: -h lists the library's variables and none of the
// order app's sinks; --version names the binary and the module.
func TestHelpAndVersion(t *testing.T) {
	t.Parallel()
	p, stdout, _ := process(nil)
	require.Equal(t, 0, (&relaycmd.App{}).Run(context.Background(), []string{"-h"}, p))
	for _, v := range []string{"DATABASE_URL", "TEMPORAL_ADDRESS", "OUTFLOW_ROUTES", "OUTFLOW_ROUTES_FILE", "OUTFLOW_RELAY_SOURCE", "OUTFLOW_RETENTION", "METRICS_ADDR", "OUTFLOW_FAILPOINTS"} {
		require.Contains(t, stdout.String(), "  "+v)
	}
	require.NotContains(t, stdout.String(), "OUTFLOW_SINKS")

	p, stdout, _ = process(nil)
	require.Equal(t, 0, (&relaycmd.App{}).Run(context.Background(), []string{"--version"}, p))
	require.True(t, strings.HasPrefix(stdout.String(), "starter github.com/outflow/outflow/outbox "), stdout.String())
}

// TestMalformedSettings: every malformed setting is named, one a line,
// with exit status 2, before anything is dialled (the database's port
// here is closed); without routes the library's starter asks for them.
func TestMalformedSettings(t *testing.T) {
	t.Parallel()
	p, _, stderr := process(map[string]string{
		"DATABASE_URL":         "postgres://postgres@127.0.0.1:1/none",
		"OUTFLOW_RELAY_BATCH":  "many",
		"OUTFLOW_RETENTION":    "7d",
		"OUTFLOW_RELAY_SOURCE": "kafka",
		"TEMPORAL_ADDRESS":     "temporal",
	})
	require.Equal(t, 2, (&relaycmd.App{}).Run(context.Background(), nil, p))
	for _, want := range []string{
		"starter: OUTFLOW_ROUTES is unset: set it (or OUTFLOW_ROUTES_FILE)",
		`starter: OUTFLOW_RELAY_BATCH="many"`,
		`starter: OUTFLOW_RETENTION="7d"`,
		`starter: OUTFLOW_RELAY_SOURCE="kafka"`,
		`starter: TEMPORAL_ADDRESS="temporal"`,
	} {
		require.Contains(t, stderr.String(), want)
	}
	require.NotContains(t, stderr.String(), "cannot reach", "nothing was dialled")
}

// TestRelayStartsTheRoutedWorkflow: the library's starter, given only
// OUTFLOW_ROUTES, starts the routed workflow of an enqueued event on the
// route's task queue (workflow ID = event ID), serves /metrics, and stops
// cleanly (exit status 0) when its context ends.
func TestRelayStartsTheRoutedWorkflow(t *testing.T) {
	t.Parallel()
	temporal := devserver.Start(t, devserver.Options{})
	pool, url := testdb.New(t)
	queue := "billing-" + uuid.NewString()[:8]
	e := testdb.Enqueue(t, pool, testdb.Event(t, "inv-1", "InvoiceIssued"))[0]

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, _, stderr := process(map[string]string{
		"DATABASE_URL":     url,
		"TEMPORAL_ADDRESS": temporal.Address(),
		"OUTFLOW_ROUTES":   "InvoiceIssued=InvoiceWorkflow@" + queue,
		"METRICS_ADDR":     "127.0.0.1:0",
	})
	code := make(chan int, 1)
	go func() { code <- (&relaycmd.App{}).Run(ctx, nil, p) }()

	require.Eventually(t, func() bool {
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		d, err := temporal.Client().DescribeWorkflow(dctx, e.ID.String(), "")
		return err == nil && d.WorkflowType.Name == "InvoiceWorkflow" && d.TaskQueueName == queue
	}, time.Minute, 100*time.Millisecond, "no InvoiceWorkflow %s on %s; stderr:\n%s", e.ID, queue, stderr)
	require.Contains(t, stderr.String(), "relay started")
	require.Contains(t, stderr.String(), "serving metrics")

	cancel()
	select {
	case c := <-code:
		require.Equal(t, 0, c, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the starter did not stop; stderr:\n%s", stderr)
	}
}
