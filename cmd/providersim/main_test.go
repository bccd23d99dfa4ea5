package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testlog"
	"github.com/outflow/outflow/providersim"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var listeningURL = regexp.MustCompile(`msg=listening url=(http://127\.0\.0\.1:\d+)`)

func TestRunServesAndShutsDown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs testlog.SyncBuffer
	env := map[string]string{"PROVIDERSIM_ADDR": "127.0.0.1:0"}
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, func(k string) string { return env[k] }, io.Discard, &logs) }()

	var baseURL string
	require.Eventually(t, func() bool {
		m := listeningURL.FindStringSubmatch(logs.String())
		if m != nil {
			baseURL = m[1]
		}
		return m != nil
	}, 10*time.Second, 5*time.Millisecond, "no listening line in: %s", logs.String())

	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	c := &providersim.Client{BaseURL: baseURL, HTTP: hc}
	l, err := c.Ledger(ctx)
	require.NoError(t, err)
	require.Empty(t, l.PaymentIntents)
	require.NoError(t, c.InjectFault(ctx, providersim.Fault{Operation: providersim.OperationEmailsSend, Fault: "error_500"}))
	hc.CloseIdleConnections()

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	require.Contains(t, logs.String(), "msg=stopped")
}

func TestRunRejectsABusyAddress(t *testing.T) {
	t.Parallel()
	sim := providersim.New(providersim.Options{})
	defer sim.Close()
	url, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	addr := url[len("http://"):]

	var logs testlog.SyncBuffer
	err = run(context.Background(), []string{"-addr", addr}, func(string) string { return "" }, io.Discard, &logs)
	require.ErrorContains(t, err, "PROVIDERSIM_ADDR")
}
