package main

import (
	"os/exec"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/dev/testdb"
)

// TestRelaySourceRejectsUnknownValue: a typo in OUTFLOW_RELAY_SOURCE stops
// the starter at once with an error naming both sources.
func TestRelaySourceRejectsUnknownValue(t *testing.T) {
	t.Parallel()
	_, url := testdb.New(t)
	p := startStarter(t, url, "src-"+uuid.NewString()[:8], "OUTFLOW_RELAY_SOURCE=kafka")
	err := p.wait(t, 30*time.Second)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 2, exit.ExitCode(), "a configuration error")
	require.Contains(t, p.output(), `starter: OUTFLOW_RELAY_SOURCE="kafka": want poll`)
}

// TestRelaySourceLogIsRefusedForNow: the log source's name is fixed, but
// the starter refuses it at once, saying what is missing, rather than run a
// relay the order app's writes never reach.
func TestRelaySourceLogIsRefusedForNow(t *testing.T) {
	t.Parallel()
	_, url := testdb.New(t)
	p := startStarter(t, url, "src-"+uuid.NewString()[:8], "OUTFLOW_RELAY_SOURCE=log")
	err := p.wait(t, 30*time.Second)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 2, exit.ExitCode(), "a configuration error")
	require.Contains(t, p.output(), "OUTFLOW_RELAY_SOURCE=log: the log source is not available in the starter yet")
	require.Contains(t, p.output(), "still enqueue to outbox_events")
}

// TestRelaySourceCDCNeedsLogicalWAL: on a server with wal_level=replica (the
// shared test server) the cdc source refuses to start and says what to set.
func TestRelaySourceCDCNeedsLogicalWAL(t *testing.T) {
	t.Parallel()
	_, url := testdb.New(t)
	p := startStarter(t, url, "src-"+uuid.NewString()[:8], "OUTFLOW_RELAY_SOURCE=cdc")
	require.Error(t, p.wait(t, 30*time.Second))
	require.Contains(t, p.output(), "wal_level=logical")
}

// TestCDCCrashAfterPublishThenRestart: the cdc starter dies of SIGKILL after
// Temporal accepted a start and before the mark and the slot's confirmation.
// Restarted, it resumes from the slot (and its backfill), the duplicate start
// is absorbed, every row is marked and each event has exactly one workflow.
func TestCDCCrashAfterPublishThenRestart(t *testing.T) {
	t.Parallel()
	pool, url := testdb.NewLogical(t)
	tq := "cdc-crash-" + uuid.NewString()[:8]
	slot := "cdc_crash_" + uuid.NewString()[:8]
	crashed := startStarter(t, url, tq, "OUTFLOW_RELAY_SOURCE=cdc", "OUTFLOW_CDC_SLOT="+slot,
		"OUTFLOW_FAILPOINTS=cdc.after_publish=crash")
	// Events committed before the slot exists are the backfill's (the
	// polling path, without this failpoint): enqueue once the stream runs.
	crashed.waitLog(t, "outbox cdc: streaming")
	events := enqueueOrders(t, pool, 4)
	requireKilled(t, crashed)
	require.Less(t, countPublished(t, pool, events), len(events), "the crash came before the marks")

	requireRecoveredOnce(t, pool, url, tq, events, "OUTFLOW_RELAY_SOURCE=cdc", "OUTFLOW_CDC_SLOT="+slot)
}
