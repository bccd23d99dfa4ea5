package ctl

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestStatus: the text report and the --json shape, over a backlog with a
// pending, a backing-off, a quarantined and a recently published event and a
// relay's live lease.
func TestStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pending := b.Enqueue(t, "o-pending", "OrderCreated")[0]
	backing := b.Enqueue(t, "o-backing", "OrderCreated")[0]
	quarantined := b.Enqueue(t, "o-quarantined", "OrderCreated")[0]
	published := b.Enqueue(t, "o-published", "OrderCreated")[0]
	leased := b.Enqueue(t, "o-leased", "OrderCreated")[0]
	b.Force(t, pending.ID, outboxtest.SetOccurred(90*time.Second))
	b.Force(t, backing.ID, outboxtest.SetFailed(2, "", time.Hour))
	b.Quarantine(t, quarantined.ID, "no route")
	b.Force(t, published.ID, outboxtest.SetPublished(3*time.Minute))
	b.Force(t, leased.ID, outboxtest.SetLeased("relay-7", 30*time.Second))

	r := b.OK(t, "status")
	require.Regexp(t, `source\s+poll\s+\(since .*, by migration`, r.Stdout, "the recorded source first")
	require.Regexp(t, `pending\s+3\s+\(oldest 1m3\d`, r.Stdout)
	require.Regexp(t, `backing off\s+1`, r.Stdout)
	require.Regexp(t, `quarantined\s+1\s+\(outboxctl list --quarantined`, r.Stdout)
	require.Regexp(t, `published\s+1m: 0  5m: 1  15m: 1`, r.Stdout)
	require.Regexp(t, `leases\s+relay-7\s+1 events, first expires in \d`, r.Stdout)
	require.Regexp(t, `cleanup\s+never ran`, r.Stdout)

	r = b.OK(t, "status", "--json")
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &got), r.Stdout)
	require.EqualValues(t, 3, got["pending"])
	require.EqualValues(t, 1, got["quarantined"])
	require.EqualValues(t, 1, got["backing_off"])
	require.EqualValues(t, 0, got["replaying"])
	require.EqualValues(t, 0, got["skipped"])
	require.InDelta(t, 90, got["oldest_pending_age_seconds"], 30)
	require.Equal(t, map[string]any{"last_1m": 0.0, "last_5m": 1.0, "last_15m": 1.0}, got["published"])
	leases := got["leases"].([]any)
	require.Len(t, leases, 1)
	lease := leases[0].(map[string]any)
	require.Equal(t, "relay-7", lease["owner"])
	require.EqualValues(t, 1, lease["events"])
	require.Regexp(t, regexp.MustCompile(`^\d{4}-\d\d-\d\dT`), lease["earliest_expiry"])
	require.Nil(t, got["cleanup_horizon"])
	require.Contains(t, got, "checked_at")
	require.Equal(t, "poll", got["source"].(map[string]any)["source"])

	b.OK(t, "source", "set", "log", "--reason", "status test", "--yes")
	require.Regexp(t, `source\s+log\s+\(since .*, by .*: status test\)`, b.OK(t, "status").Stdout)
}

// TestStatusShowsCDCSlot: when the cdc relay source's slot exists, status
// shows whether a relay streams it, its lag and the WAL it retains; --json
// carries it as cdc_slot. Without a slot neither appears.
func TestStatusShowsCDCSlot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.OK(t, "status")
	require.NotContains(t, r.Stdout, "cdc slot")
	require.NotContains(t, b.OK(t, "status", "--json").Stdout, "cdc_slot")

	pool, url := testdb.NewLogical(t)
	lb := bundleOn(b.Ctx, pool, url)
	_, err := pool.Exec(lb.Ctx, "SELECT pg_create_logical_replication_slot('outflow_outbox', 'pgoutput')")
	require.NoError(t, err)
	lb.Enqueue(t, "o-1", "OrderCreated") // WAL the idle slot retains
	r = lb.OK(t, "status")
	require.Regexp(t, `cdc slot\s+outflow_outbox\s+inactive`, r.Stdout)
	require.Regexp(t, `lag\s+\d+(\.\d)? [KMG]?i?B`, r.Stdout)
	require.Regexp(t, `retained WAL\s+\d`, r.Stdout)

	r = lb.OK(t, "status", "--json")
	var got struct {
		CDCSlot *struct {
			Name     string `json:"name"`
			Active   bool   `json:"active"`
			LagBytes int64  `json:"lag_bytes"`
		} `json:"cdc_slot"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &got), r.Stdout)
	require.NotNil(t, got.CDCSlot)
	require.Equal(t, "outflow_outbox", got.CDCSlot.Name)
	require.False(t, got.CDCSlot.Active)
	require.Positive(t, got.CDCSlot.LagBytes)
}
