package outboxops_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxops"
)

// TestLogEventByIDUsesItsIndex: the operator's lookup of a log event by id
// (outboxctl show) finds it through outbox_log_event_idx, not by scanning
// the log.
func TestLogEventByIDUsesItsIndex(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	id := uuid.Must(uuid.NewV7())
	_, err := pool.Exec(ctx, `
		INSERT INTO outbox_log (pos, gate, partition, event_id, aggregate_type, aggregate_id, aggregate_sequence,
		                        event_type, schema_version, payload)
		SELECT nextval('outbox_log_pos'), 1, outbox_log_partition('order', 'x-' || i),
		       CASE WHEN i = 0 THEN $1::uuid ELSE gen_random_uuid() END, 'order', 'x-' || i, 1, 'E', 1, '{}'
		FROM generate_series(0, 5000) i`, id)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE outbox_log`)
	require.NoError(t, err)

	sql, args := outboxops.LogEventByIDStatementForTest(id)
	var plan []byte
	require.NoError(t, pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&plan))
	var doc []map[string]any
	require.NoError(t, json.Unmarshal(plan, &doc))
	var indexes, seqScans []string
	var walk func(node map[string]any)
	walk = func(node map[string]any) {
		if name, ok := node["Index Name"].(string); ok {
			indexes = append(indexes, name)
		}
		if node["Node Type"] == "Seq Scan" {
			seqScans = append(seqScans, node["Relation Name"].(string))
		}
		children, _ := node["Plans"].([]any)
		for _, c := range children {
			walk(c.(map[string]any))
		}
	}
	walk(doc[0]["Plan"].(map[string]any))
	t.Logf("indexes %v, sequential scans %v", indexes, seqScans)
	// Every row is in the first range (outbox_log_r0); the later ranges
	// are empty.
	require.Contains(t, indexes, "outbox_log_r0_event_id_idx", "the event is found by its index")
	require.NotContains(t, seqScans, "outbox_log_r0")
	got, err := outboxops.LogEventByID(ctx, pool, id)
	require.NoError(t, err)
	require.Equal(t, id, got.ID)
}
